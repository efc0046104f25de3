import type { ProviderCheck } from '../types.js';
import { bodyHmacCheck } from './body-hmac.js';

/**
 * Bitbucket (Cloud and Data Center): `X-Hub-Signature: sha256=<hex HMAC-SHA256(secret, body)>`.
 * https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/,
 * https://bitbucket.org/blog/enhanced-webhook-security
 */
export function bitbucketCheck(secret: string): ProviderCheck {
  return bodyHmacCheck(secret, {
    header: 'X-Hub-Signature',
    algorithm: 'sha256',
    encoding: 'hex',
    prefix: 'sha256=',
  });
}
