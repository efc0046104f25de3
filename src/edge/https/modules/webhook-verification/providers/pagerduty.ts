import {
  anyMatch,
  decodeHex,
  fail,
  header,
  hmac,
  keyValueList,
  missingHeader,
  OK,
  SIGNATURE_MISMATCH,
} from '../shared.js';
import type { ProviderCheck } from '../types.js';

const HEADER = 'X-PagerDuty-Signature';

/**
 * PagerDuty (v3 webhooks): `X-PagerDuty-Signature: v1=<hex HMAC-SHA256(secret, body)>,v1=...`; one
 * signature per active secret while a secret is rotated, and any v1 that matches is enough.
 * https://github.com/PagerDuty/developer-docs/blob/main/docs/webhooks/04-Signatures.md
 */
export function pagerdutyCheck(secret: string): ProviderCheck {
  return (request) => {
    const value = header(request, HEADER);
    if (value === undefined) return missingHeader(HEADER);
    const signatures = keyValueList(value)
      .filter(([version]) => version === 'v1')
      .map(([, signature]) => decodeHex(signature));
    if (signatures.length === 0) return fail(`malformed header ${HEADER}: no v1 signature`);
    return anyMatch([hmac('sha256', secret, request.body)], signatures) ? OK : fail(SIGNATURE_MISMATCH);
  };
}
