import {
  anyMatch,
  decodeBase64,
  decodeHex,
  fail,
  formFields,
  type HashAlgorithm,
  header,
  hmac,
  mediaType,
  missingHeader,
  OK,
  SIGNATURE_MISMATCH,
  sha256,
} from '../shared.js';
import type { ProviderCheck, SignedRequest } from '../types.js';

const SIGNATURE = 'X-Twilio-Signature';
/** Present when a Webhooks Rule signs with a shared key instead of the auth token: `key=...,algorithm=HMAC_SHA256`. */
const SETTINGS = 'X-Twilio-Webhooks-Signature-Settings';

/**
 * Twilio: `X-Twilio-Signature: <base64 HMAC-SHA1(auth token, url + params)>`, url the full URL
 * called (query included) and params, for a form-encoded POST, each field's name and value with
 * names sorted (byte order). A JSON body is not a param: Twilio then adds `bodySHA256=<hex
 * SHA-256(body)>` to the URL, which is signed, and the body must hash to it. Twilio keeps the port
 * in the signed URL for some callbacks and drops it for others, so both spellings are tried, as its
 * helper libraries do.
 * https://www.twilio.com/docs/usage/security#validating-requests
 */
export function twilioCheck(secret: string): ProviderCheck {
  return (request) => {
    const signature = header(request, SIGNATURE);
    if (signature === undefined) return missingHeader(SIGNATURE);
    const provided = decodeBase64(signature);
    if (provided === undefined) return fail(`malformed header ${SIGNATURE}: not base64`);
    const algorithm = signatureAlgorithm(header(request, SETTINGS));
    if (algorithm === undefined) return fail(`unsupported algorithm in header ${SETTINGS}`);
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      return fail('the request URL is not absolute');
    }
    const bodyHash = url.searchParams.get('bodySHA256');
    const params = bodyHash === null ? signedParams(request) : '';
    const expected = urlSpellings(request.url, url).map((spelling) =>
      hmac(algorithm, secret, spelling, params),
    );
    if (!anyMatch(expected, [provided])) return fail(SIGNATURE_MISMATCH);
    if (bodyHash !== null && !anyMatch([sha256(request.body)], [decodeHex(bodyHash)])) {
      return fail('body does not match the bodySHA256 query parameter');
    }
    return OK;
  };
}

function signatureAlgorithm(settings: string | undefined): HashAlgorithm | undefined {
  if (settings === undefined) return 'sha1';
  const algorithm = /(?:^|,)\s*algorithm=([A-Za-z0-9_]+)/.exec(settings)?.[1]?.toUpperCase();
  if (algorithm === 'HMAC_SHA1') return 'sha1';
  if (algorithm === 'HMAC_SHA256') return 'sha256';
  return undefined;
}

/** The POST fields as Twilio's helper libraries sign them: names sorted, each name's distinct values sorted. */
function signedParams(request: SignedRequest): string {
  if (request.method.toUpperCase() !== 'POST' || mediaType(request) !== 'application/x-www-form-urlencoded') {
    return '';
  }
  const values = new Map<string, Set<string>>();
  for (const [name, value] of formFields(request.body)) {
    const set = values.get(name) ?? new Set<string>();
    set.add(value);
    values.set(name, set);
  }
  return [...values.keys()]
    .sort(byCodeUnit)
    .flatMap((name) => [...(values.get(name) ?? [])].sort(byCodeUnit).map((value) => name + value))
    .join('');
}

function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The URL as called, normalized, with the scheme's default port spelled out, and without any port. */
function urlSpellings(raw: string, url: URL): string[] {
  const spellings = new Set([raw, url.toString()]);
  const defaultPort = url.protocol === 'https:' ? '443' : url.protocol === 'http:' ? '80' : undefined;
  if (url.port === '' && defaultPort !== undefined) {
    spellings.add(`${url.protocol}//${url.host}:${defaultPort}${url.pathname}${url.search}${url.hash}`);
  }
  const withoutPort = new URL(url.toString());
  withoutPort.port = '';
  spellings.add(withoutPort.toString());
  return [...spellings];
}
