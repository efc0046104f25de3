import type { ProviderCheck } from '../types.js';
import { bodyHmacCheck } from './body-hmac.js';

/**
 * Intercom: `X-Hub-Signature: sha1=<hex HMAC-SHA1(client_secret, body)>`.
 * https://developers.intercom.com/building-apps/docs/webhook-model#section-signed-notifications
 */
export function intercomCheck(secret: string): ProviderCheck {
  return bodyHmacCheck(secret, {
    header: 'X-Hub-Signature',
    algorithm: 'sha1',
    encoding: 'hex',
    prefix: 'sha1=',
  });
}
