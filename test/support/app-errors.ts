import { AppError } from '../../domain/errors.js';

/** The typed API error a rule throws, for unit tests that check its code and details; fails if none is thrown. */
export async function appErrorOf(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error('expected an AppError');
}
