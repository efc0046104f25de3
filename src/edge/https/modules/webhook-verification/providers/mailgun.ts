import { multipartFields } from '../multipart.js';
import {
  anyMatch,
  decodeHex,
  fail,
  formFields,
  hmac,
  mediaType,
  mediaTypeParameter,
  OK,
  SIGNATURE_MISMATCH,
} from '../shared.js';
import type { ProviderCheck, SignedRequest } from '../types.js';

interface MailgunSignature {
  timestamp: string;
  token: string;
  signatures: string[];
}

/**
 * Mailgun: the signature travels in the body, not a header: `signature: {timestamp, token,
 * signature[, parent-signature]}` in JSON webhooks, top-level `timestamp`, `token`, `signature`
 * fields in form-encoded or multipart posts (legacy webhooks, routes). `signature` is the hex
 * HMAC-SHA256(webhook signing key, timestamp + token); `parent-signature` is the same under the
 * primary account's key (events of subaccounts), so either may match. Note that Mailgun signs only
 * the timestamp and token, not the event data, and gives no tolerance for the timestamp.
 * https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks
 */
export function mailgunCheck(secret: string): ProviderCheck {
  return (request) => {
    const found = signatureOf(request);
    if (typeof found === 'string') return fail(found);
    const provided = found.signatures.map((signature) => decodeHex(signature));
    const expected = hmac('sha256', secret, found.timestamp, found.token);
    return anyMatch([expected], provided) ? OK : fail(SIGNATURE_MISMATCH);
  };
}

/** The signature fields of the body, or why there are none. */
function signatureOf(request: SignedRequest): MailgunSignature | string {
  const type = mediaType(request);
  if (type === 'application/json' || type.endsWith('+json')) return fromJson(request.body);
  if (type === 'application/x-www-form-urlencoded') return fromFields(firstValues(formFields(request.body)));
  if (type === 'multipart/form-data') {
    const boundary = mediaTypeParameter(request, 'boundary');
    if (boundary === undefined || boundary === '') return 'multipart body without a boundary';
    return fromFields(multipartFields(request.body, boundary));
  }
  return `unsupported content type ${JSON.stringify(type.slice(0, 64))}: expected JSON or form data`;
}

function fromJson(body: Buffer): MailgunSignature | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return 'body is not JSON';
  }
  const signature = isRecord(parsed) ? parsed.signature : undefined;
  if (!isRecord(signature)) return 'missing signature object in the body';
  const timestamp = scalar(signature.timestamp);
  const token = scalar(signature.token);
  const signatures = [scalar(signature.signature), scalar(signature['parent-signature'])].filter(
    (value): value is string => value !== undefined,
  );
  if (timestamp === undefined) return 'missing signature.timestamp in the body';
  if (token === undefined) return 'missing signature.token in the body';
  if (signatures.length === 0) return 'missing signature.signature in the body';
  return { timestamp, token, signatures };
}

function fromFields(fields: Map<string, string>): MailgunSignature | string {
  const timestamp = fields.get('timestamp');
  const token = fields.get('token');
  const signature = fields.get('signature');
  if (timestamp === undefined) return 'missing timestamp field in the body';
  if (token === undefined) return 'missing token field in the body';
  if (signature === undefined) return 'missing signature field in the body';
  return { timestamp, token, signatures: [signature] };
}

function firstValues(fields: Array<[string, string]>): Map<string, string> {
  const values = new Map<string, string>();
  for (const [name, value] of fields) if (!values.has(name)) values.set(name, value);
  return values;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A string, or a number written as Mailgun writes it (timestamps come both ways). */
function scalar(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  return undefined;
}
