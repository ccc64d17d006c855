import { createHash } from 'node:crypto';

/**
 * What is stored in place of a secret we generated with 256 random bits (API keys, session tokens, device codes,
 * sign-up links): its SHA-256. That much entropy cannot be guessed or brute-forced from the hash, so no slow,
 * salted password hash is needed, and a lookup by hash stays one indexed equality.
 */
export const hashSecret = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('hex');
