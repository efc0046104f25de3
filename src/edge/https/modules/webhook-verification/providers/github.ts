import { header, missingHeader } from '../shared.js';
import type { ProviderCheck } from '../types.js';
import { bodyHmacCheck } from './body-hmac.js';

/**
 * GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>`. Only when that header is
 * absent (older GitHub Enterprise Server) is the legacy `X-Hub-Signature: sha1=<hex HMAC-SHA1>` used.
 * https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
 */
export function githubCheck(secret: string): ProviderCheck {
  const sha256 = bodyHmacCheck(secret, {
    header: 'X-Hub-Signature-256',
    algorithm: 'sha256',
    encoding: 'hex',
    prefix: 'sha256=',
  });
  const sha1 = bodyHmacCheck(secret, {
    header: 'X-Hub-Signature',
    algorithm: 'sha1',
    encoding: 'hex',
    prefix: 'sha1=',
  });
  return (request) => {
    if (header(request, 'X-Hub-Signature-256') !== undefined) return sha256(request);
    if (header(request, 'X-Hub-Signature') !== undefined) return sha1(request);
    return missingHeader('X-Hub-Signature-256');
  };
}
