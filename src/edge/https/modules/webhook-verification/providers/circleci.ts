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

const HEADER = 'circleci-signature';

/**
 * CircleCI: `circleci-signature: v1=<hex HMAC-SHA256(secret, body)>[,v2=...]`. Only v1 exists; the
 * docs ask to check only the latest version, so other versions are ignored, never trusted.
 * https://circleci.com/docs/webhooks/#payload-signature
 */
export function circleciCheck(secret: string): ProviderCheck {
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
