import { createHash, randomBytes } from 'node:crypto';

/** A secret with 256 bits of randomness, URL-safe, optionally prefixed so it is recognisable in a leak scan. */
export function newSecretToken(prefix?: string): string {
  const secret = randomBytes(32).toString('base64url');
  return prefix ? `${prefix}_${secret}` : secret;
}

/** Tokens carry 256 bits of entropy, so a plain SHA-256 is a safe, fast, lookup-able hash. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
