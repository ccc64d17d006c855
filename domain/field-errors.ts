import { AppError } from './errors.js';

/** One refused input field, as the contract's VALIDATION_FAILED `details.fields` lists them. */
export interface FieldProblem {
  field: string;
  message: string;
}

/** 422 naming every refused field; the message repeats the first so a client that reads only it still learns why. */
export const validationFailed = (fields: readonly FieldProblem[]): AppError =>
  new AppError('VALIDATION_FAILED', fields[0] ? `${fields[0].field}: ${fields[0].message}` : 'The request is invalid', {
    details: { fields },
  });

export const invalidField = (field: string, message: string): AppError => validationFailed([{ field, message }]);
