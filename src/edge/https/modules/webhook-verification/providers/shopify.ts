import type { ProviderCheck } from '../types.js';
import { bodyHmacCheck } from './body-hmac.js';

/**
 * Shopify: `X-Shopify-Hmac-Sha256: <base64 HMAC-SHA256(client secret, body)>`.
 * https://shopify.dev/docs/apps/build/webhooks/subscribe/https
 */
export function shopifyCheck(secret: string): ProviderCheck {
  return bodyHmacCheck(secret, { header: 'X-Shopify-Hmac-Sha256', algorithm: 'sha256', encoding: 'base64' });
}
