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

const SHA256_HEADER = 'x-square-hmacsha256-signature';
const SHA1_HEADER = 'x-square-signature';

/**
 * Square: `x-square-hmacsha256-signature: <base64 HMAC-SHA256(signature key, notification URL +
 * body)>`; the URL is the one the subscription was configured with, which is the URL called.
 * Without that header, the legacy `x-square-signature` (HMAC-SHA1, same input) is checked.
 * https://developer.squareup.com/docs/webhooks/step3validate
 */
export function squareCheck(secret: string): ProviderCheck {
  return (request) => {
    const sha256 = header(request, SHA256_HEADER);
    const sha1 = header(request, SHA1_HEADER);
    const [name, value, algorithm] =
      sha256 !== undefined
        ? [SHA256_HEADER, sha256, 'sha256' as const]
        : sha1 !== undefined
          ? [SHA1_HEADER, sha1, 'sha1' as const]
          : [undefined, undefined, undefined];
    if (name === undefined) return missingHeader(SHA256_HEADER);
    const provided = decodeBase64(value);
    if (provided === undefined) return fail(`malformed header ${name}: not base64`);
    const expected = hmac(algorithm, secret, request.url, request.body);
    return anyMatch([expected], [provided]) ? OK : fail(SIGNATURE_MISMATCH);
  };
}
