import {
  anyMatch,
  decodeBase64,
  decodeHex,
  fail,
  type HashAlgorithm,
  header,
  hmac,
  missingHeader,
  OK,
  SIGNATURE_MISMATCH,
} from '../shared.js';
import type { ProviderCheck } from '../types.js';

export interface BodyHmacSpec {
  /** As the provider's docs spell it; looked up case-insensitively. */
  header: string;
  algorithm: HashAlgorithm;
  encoding: 'hex' | 'base64';
  /** A prefix the header value must carry, e.g. `sha256=`. */
  prefix?: string;
}

/** The common scheme: one header holding the HMAC of the raw body, keyed with the secret. */
export function bodyHmacCheck(secret: string, spec: BodyHmacSpec): ProviderCheck {
  return (request) => {
    const value = header(request, spec.header);
    if (value === undefined) return missingHeader(spec.header);
    const trimmed = value.trim();
    if (spec.prefix !== undefined && !trimmed.startsWith(spec.prefix)) {
      return fail(`malformed header ${spec.header}: expected ${spec.prefix}<signature>`);
    }
    const encoded = trimmed.slice(spec.prefix?.length ?? 0);
    const provided = spec.encoding === 'hex' ? decodeHex(encoded) : decodeBase64(encoded);
    if (provided === undefined) return fail(`malformed header ${spec.header}: not ${spec.encoding}`);
    const expected = hmac(spec.algorithm, secret, request.body);
    return anyMatch([expected], [provided]) ? OK : fail(SIGNATURE_MISMATCH);
  };
}
