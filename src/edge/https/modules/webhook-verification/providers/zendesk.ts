import {
  anyMatch,
  decodeBase64,
  fail,
  header,
  hmac,
  missingHeader,
  OK,
  SIGNATURE_MISMATCH,
} from '../shared.js';
import type { ProviderCheck } from '../types.js';

const SIGNATURE = 'X-Zendesk-Webhook-Signature';
const TIMESTAMP = 'X-Zendesk-Webhook-Signature-Timestamp';

/**
 * Zendesk: `X-Zendesk-Webhook-Signature: <base64 HMAC-SHA256(signing secret, timestamp + body)>`,
 * the timestamp (ISO 8601) from `X-Zendesk-Webhook-Signature-Timestamp`. The docs give no
 * tolerance for it, so none is enforced; a GET or DELETE may have an empty body.
 * https://developer.zendesk.com/documentation/webhooks/verifying/
 */
export function zendeskCheck(secret: string): ProviderCheck {
  return (request) => {
    const signature = header(request, SIGNATURE);
    const timestamp = header(request, TIMESTAMP);
    if (signature === undefined) return missingHeader(SIGNATURE);
    if (timestamp === undefined) return missingHeader(TIMESTAMP);
    const provided = decodeBase64(signature);
    if (provided === undefined) return fail(`malformed header ${SIGNATURE}: not base64`);
    const expected = hmac('sha256', secret, timestamp, request.body);
    return anyMatch([expected], [provided]) ? OK : fail(SIGNATURE_MISMATCH);
  };
}
