import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

const EDGE_KEY_PREFIX = 'ewedge_';

/**
 * The key `edgeward edge` processes present to the control plane. It is not an API key: it reads
 * the edge configuration (private keys, token hashes), which no API caller may, and does nothing
 * else. `EDGEWARD_EDGE_KEY` when set; otherwise derived from the secret key that seals secrets at
 * rest, so every replica sharing that key agrees on it with no extra setting
 * (`edgeward server --print-edge-key` shows it).
 */
export function edgeKeyFor(secretKey: Buffer, fromEnv: string | undefined): string {
  if (fromEnv !== undefined && fromEnv.trim() !== '') {
    if (fromEnv.trim().length < 32) throw new Error('EDGEWARD_EDGE_KEY must have at least 32 characters');
    return fromEnv.trim();
  }
  return `${EDGE_KEY_PREFIX}${createHmac('sha256', secretKey).update('edgeward edge key v1').digest('base64url')}`;
}

/** Constant-time comparison (of digests, so lengths never leak either). */
export function edgeKeyMatches(expected: string, given: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(expected), digest(given));
}
