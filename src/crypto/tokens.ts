import { hash, randomBytes } from 'node:crypto';

/** A secret with 256 bits of randomness, URL-safe, optionally prefixed so it is recognisable in a leak scan. */
export function newSecretToken(prefix?: string): string {
  const secret = randomBytes(32).toString('base64url');
  return prefix ? `${prefix}_${secret}` : secret;
}

/**
 * Tokens carry 256 bits of entropy, so a plain SHA-256 is a safe, fast, lookup-able hash. Every
 * request pays it: the one-shot `hash` costs less than half of a `createHash` object's round trip.
 */
export function hashToken(token: string): string {
  return hash('sha256', token, 'hex');
}
