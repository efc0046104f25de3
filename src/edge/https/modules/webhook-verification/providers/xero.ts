import type { ProviderCheck } from '../types.js';
import { bodyHmacCheck } from './body-hmac.js';

/**
 * Xero: `x-xero-signature: <base64 HMAC-SHA256(webhook key, body)>`. A failed check must answer 401
 * for Xero's "intent to receive" handshake to pass; that status is the caller's choice.
 * https://developer.xero.com/documentation/webhooks/configuring-your-server
 */
export function xeroCheck(secret: string): ProviderCheck {
  return bodyHmacCheck(secret, { header: 'x-xero-signature', algorithm: 'sha256', encoding: 'base64' });
}
