import type { ProviderCheck } from '../types.js';
import { v1SignatureListCheck } from './v1-signature-list.js';

/**
 * CircleCI: `circleci-signature: v1=<hex HMAC-SHA256(secret, body)>[,v2=...]`. Only v1 exists; the
 * docs ask to check only the latest version, so other versions are ignored, never trusted.
 * https://circleci.com/docs/webhooks/#payload-signature
 */
export function circleciCheck(secret: string): ProviderCheck {
  return v1SignatureListCheck('circleci-signature', secret);
}
