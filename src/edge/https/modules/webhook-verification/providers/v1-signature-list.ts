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

/**
 * `<header>: v1=<hex HMAC-SHA256(secret, body)>[,v1=...][,v2=...]`: any v1 signature that matches
 * is enough; other versions are ignored, never trusted.
 */
export function v1SignatureListCheck(headerName: string, secret: string): ProviderCheck {
  return (request) => {
    const value = header(request, headerName);
    if (value === undefined) return missingHeader(headerName);
    const signatures = keyValueList(value)
      .filter(([version]) => version === 'v1')
      .map(([, signature]) => decodeHex(signature));
    if (signatures.length === 0) return fail(`malformed header ${headerName}: no v1 signature`);
    return anyMatch([hmac('sha256', secret, request.body)], signatures) ? OK : fail(SIGNATURE_MISMATCH);
  };
}
