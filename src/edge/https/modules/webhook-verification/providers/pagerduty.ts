import type { ProviderCheck } from '../types.js';
import { v1SignatureListCheck } from './v1-signature-list.js';

/**
 * PagerDuty (v3 webhooks): `X-PagerDuty-Signature: v1=<hex HMAC-SHA256(secret, body)>,v1=...`; one
 * signature per active secret while a secret is rotated, and any v1 that matches is enough.
 * https://github.com/PagerDuty/developer-docs/blob/main/docs/webhooks/04-Signatures.md
 */
export function pagerdutyCheck(secret: string): ProviderCheck {
  return v1SignatureListCheck('X-PagerDuty-Signature', secret);
}
