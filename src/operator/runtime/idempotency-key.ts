import { createHash } from 'node:crypto';
import { canonicalJson } from './same-json.js';

/**
 * An Idempotency-Key that also names the request: `<key>-<digest of method, path and body>`. A
 * retry of the same request (a lost answer, a restart) replays the first one; a request whose body
 * changed meanwhile (a new spec, a replaced reference, a rotated Secret value) is a new create,
 * where the key alone would get the server's 409 for a key reused with another body. Only what is
 * sent goes in, so state a reconcile merely looked at (a Secret written after the create) does not.
 */
export function keyWithRequestDigest(
  key: string,
  request: { method: string; path: string; body: unknown },
): string {
  const digest = createHash('sha256')
    .update(`${request.method} ${request.path}\n${canonicalJson(request.body)}`)
    .digest('hex')
    // 96 bits: collisions between one object's requests are out of reach; the key stays short.
    .slice(0, 24);
  return `${key}-${digest}`;
}
