/**
 * Secrets handed to computers and operators: keys (256 random bits, `cck_` + base64url) and enrollment codes (short,
 * typed by a person, single-use, minutes long). Only their SHA-256 hashes are stored.
 */
import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

/** Prefix of a credential key (lets a log scanner or a person tell a key from other text). */
export const KEY_PREFIX = 'cck_';
/** Letters of an enrollment code: no 0/O, 1/I/L, so it survives being read aloud or typed on a CC keyboard. */
const CODE_ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';
/** Characters of an enrollment code (10 of 31 letters ≈ 49.5 bits; a code lives minutes and is rate-limited). */
const CODE_LENGTH = 10;

/** A new random key. */
export function newKey(): string {
  return `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** A new credential id (public: shown in lists and the audit log). */
export function newCredentialId(): string {
  return `cred_${randomBytes(9).toString('base64url')}`;
}

/** A new pairing request id (public: shown in the pending list and the audit log). */
export function newPairingId(): string {
  return `pair_${randomBytes(6).toString('base64url')}`;
}

/** base64url SHA-256 of a secret: what the database holds. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('base64url');
}

/** A new enrollment code, shown as `XXXXX-XXXXX`. */
export function newEnrollmentCode(): string {
  let s = '';
  for (let i = 0; i < CODE_LENGTH; i++) s += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return `${s.slice(0, 5)}-${s.slice(5)}`;
}

/** The hash of an enrollment code as typed (case and dashes/spaces do not matter). */
export function hashEnrollmentCode(code: string): string {
  return hashSecret(`enroll:${code.toUpperCase().replace(/[\s-]/g, '')}`);
}

/** Constant-time comparison of a presented secret with the expected one (lengths hidden by hashing). */
export function secretMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}
