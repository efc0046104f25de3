import {
  anyMatch,
  decodeBase64,
  fail,
  formFields,
  header,
  hmac,
  mediaType,
  missingHeader,
  OK,
  SIGNATURE_MISMATCH,
} from '../shared.js';
import type { ProviderCheck } from '../types.js';

const SIGNATURE = 'X-Mandrill-Signature';
/** The name Mailchimp's support also gives the same header; same value, checked the same way. */
const SIGNATURE_ALIAS = 'X-Mailchimp-Signature';

/**
 * Mailchimp Transactional (formerly Mandrill): `X-Mandrill-Signature: <base64 HMAC-SHA1(webhook key,
 * url + each POST field's name and value, sorted by name)>`, the URL exactly as configured (the one
 * called). Mailchimp Marketing (audience) webhooks are not signed at all, so they cannot pass.
 * https://mailchimp.com/developer/transactional/guides/track-respond-activity-webhooks/#authenticating-webhook-requests
 */
export function mailchimpCheck(secret: string): ProviderCheck {
  return (request) => {
    const signature = header(request, SIGNATURE) ?? header(request, SIGNATURE_ALIAS);
    if (signature === undefined) return missingHeader(SIGNATURE);
    const provided = decodeBase64(signature);
    if (provided === undefined) return fail(`malformed header ${SIGNATURE}: not base64`);
    const fields = mediaType(request) === 'application/x-www-form-urlencoded' ? formFields(request.body) : [];
    // A stable sort by name, as PHP's ksort on the POST array the reference code uses.
    const sorted = [...fields].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const expected = hmac('sha1', secret, request.url, ...sorted.flat());
    return anyMatch([expected], [provided]) ? OK : fail(SIGNATURE_MISMATCH);
  };
}
