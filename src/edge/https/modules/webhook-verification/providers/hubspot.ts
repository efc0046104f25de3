import {
  anyMatch,
  decodeBase64,
  decodeHex,
  FIVE_MINUTES_S,
  fail,
  header,
  hmac,
  missingHeader,
  OK,
  outsideTolerance,
  parseUnixTime,
  SIGNATURE_MISMATCH,
  sha256,
} from '../shared.js';
import type { ProviderCheck, ProviderContext, SignedRequest, WebhookVerdict } from '../types.js';

const V3_SIGNATURE = 'X-HubSpot-Signature-v3';
const V3_TIMESTAMP = 'X-HubSpot-Request-Timestamp';
const LEGACY_SIGNATURE = 'X-HubSpot-Signature';
const LEGACY_VERSION = 'X-HubSpot-Signature-Version';

/** The escapes v3 asks to decode in the URI before signing (the `?` of the query is never escaped). */
const DECODED_ESCAPES: Readonly<Record<string, string>> = {
  '%3A': ':',
  '%2F': '/',
  '%3F': '?',
  '%40': '@',
  '%21': '!',
  '%24': '$',
  '%27': "'",
  '%28': '(',
  '%29': ')',
  '%2A': '*',
  '%2C': ',',
  '%3B': ';',
};

export function hubspotV3Uri(url: string): string {
  return url.replace(/%(?:3A|2F|3F|40|21|24|27|28|29|2A|2C|3B)/gi, (encoded) => {
    return DECODED_ESCAPES[encoded.toUpperCase()] ?? encoded;
  });
}

/**
 * HubSpot. v3: `X-HubSpot-Signature-v3: <base64 HMAC-SHA256(client secret, method + uri + body +
 * timestamp)>`, the timestamp (ms) from `X-HubSpot-Request-Timestamp`, at most 5 minutes old, some
 * escapes of the URI decoded. Requests without v3 fall back to `X-HubSpot-Signature` as
 * `X-HubSpot-Signature-Version` says: v1 = hex SHA-256(secret + body), v2 = hex SHA-256(secret +
 * method + uri + body) (plain hashes, no timestamp: kept because HubSpot still sends them).
 * https://developers.hubspot.com/docs/api/webhooks/validating-requests
 */
export function hubspotCheck(secret: string, context: ProviderContext): ProviderCheck {
  return (request) => {
    if (header(request, V3_SIGNATURE) !== undefined) return checkV3(secret, context, request);
    if (header(request, LEGACY_SIGNATURE) !== undefined) return checkLegacy(secret, request);
    return missingHeader(V3_SIGNATURE);
  };
}

function checkV3(secret: string, context: ProviderContext, request: SignedRequest): WebhookVerdict {
  const signature = header(request, V3_SIGNATURE) ?? '';
  const timestamp = header(request, V3_TIMESTAMP)?.trim();
  if (timestamp === undefined) return missingHeader(V3_TIMESTAMP);
  const ms = parseUnixTime(timestamp);
  if (ms === undefined) return fail(`malformed header ${V3_TIMESTAMP}: not a Unix time in ms`);
  const provided = decodeBase64(signature);
  if (provided === undefined) return fail(`malformed header ${V3_SIGNATURE}: not base64`);
  const stale = outsideTolerance(ms, context.now(), FIVE_MINUTES_S, V3_TIMESTAMP);
  if (stale !== undefined) return fail(stale);
  const expected = hmac('sha256', secret, request.method, hubspotV3Uri(request.url), request.body, timestamp);
  return anyMatch([expected], [provided]) ? OK : fail(SIGNATURE_MISMATCH);
}

function checkLegacy(secret: string, request: SignedRequest): WebhookVerdict {
  const version = header(request, LEGACY_VERSION)?.trim().toLowerCase();
  if (version === undefined) return missingHeader(LEGACY_VERSION);
  const provided = decodeHex(header(request, LEGACY_SIGNATURE) ?? '');
  if (provided === undefined) return fail(`malformed header ${LEGACY_SIGNATURE}: not hex`);
  let expected: Buffer;
  if (version === 'v1') expected = sha256(secret, request.body);
  else if (version === 'v2') expected = sha256(secret, request.method, request.url, request.body);
  else return fail(`unsupported ${LEGACY_VERSION} ${JSON.stringify(version.slice(0, 16))}`);
  return anyMatch([expected], [provided]) ? OK : fail(SIGNATURE_MISMATCH);
}
