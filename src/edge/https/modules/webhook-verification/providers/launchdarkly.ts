import type { ProviderCheck } from '../types.js';
import { bodyHmacCheck } from './body-hmac.js';

/**
 * LaunchDarkly: `X-LD-Signature: <hex HMAC-SHA256(secret, body)>`.
 * https://launchdarkly.com/docs/home/infrastructure/webhooks ("Sign a webhook")
 */
export function launchDarklyCheck(secret: string): ProviderCheck {
  return bodyHmacCheck(secret, { header: 'X-LD-Signature', algorithm: 'sha256', encoding: 'hex' });
}
