import { verify, X509Certificate } from 'node:crypto';
import { request as undiciRequest } from 'undici';
import { decodeBase64, fail, header, OK, SIGNATURE_MISMATCH } from '../shared.js';
import type { ProviderCheck, ProviderContext, SignedRequest } from '../types.js';

/**
 * SNS (the cloud provider's notification service) over HTTP(S): the body is a JSON message signed
 * with the service's own certificate, found at `SigningCertURL`. SignatureVersion 1 is SHA1withRSA,
 * 2 is SHA256withRSA, over "Name\nValue\n" lines of these fields, in this order:
 * Notification: Message, MessageId, Subject (if present), Timestamp, TopicArn, Type;
 * SubscriptionConfirmation and UnsubscribeConfirmation: Message, MessageId, SubscribeURL,
 * Timestamp, Token, TopicArn, Type. The certificate is trusted for coming over HTTPS from an SNS
 * host; messages delivered raw (unsigned) cannot pass.
 * https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html
 */
export function snsCheck(context: ProviderContext): ProviderCheck {
  return async (request) => {
    const message = parseMessage(request);
    if (typeof message === 'string') return fail(message);
    if (!isSnsSigningCertUrl(message.SigningCertURL)) {
      return fail('SigningCertURL is not an https://sns.<region>.amazonaws.com[.cn]/... .pem URL');
    }
    const signature = decodeBase64(message.Signature);
    if (signature === undefined) return fail('Signature is not base64');
    let certificate: X509Certificate;
    try {
      certificate = new X509Certificate(await context.fetchSnsCertificate(message.SigningCertURL));
    } catch (error) {
      return fail(`could not get the signing certificate: ${errorMessage(error)}`);
    }
    const expired = outsideValidity(certificate, context.now());
    if (expired !== undefined) return fail(expired);
    const algorithm = message.SignatureVersion === '1' ? 'sha1' : 'sha256';
    return verifies(algorithm, stringToSign(message), certificate, signature) ? OK : fail(SIGNATURE_MISMATCH);
  };
}

const SNS_HOST = /^sns\.[a-z0-9-]+\.amazonaws\.com(?:\.cn)?$/;

/** Whether `url` is where SNS keeps its signing certificates: https, an SNS host, a .pem path (and nothing more). */
export function isSnsSigningCertUrl(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  return (
    parsed.protocol === 'https:' &&
    parsed.username === '' &&
    parsed.password === '' &&
    parsed.port === '' &&
    SNS_HOST.test(parsed.hostname) &&
    parsed.pathname.endsWith('.pem') &&
    parsed.search === '' &&
    parsed.hash === ''
  );
}

type MessageType = 'Notification' | 'SubscriptionConfirmation' | 'UnsubscribeConfirmation';

interface SnsMessage {
  Type: MessageType;
  SignatureVersion: '1' | '2';
  Signature: string;
  SigningCertURL: string;
  /** The signed fields present, in signing order. */
  signed: Map<string, string>;
}

/** The signed fields of each type in the order they are signed; `true` marks an optional one. */
const CONFIRMATION_FIELDS: ReadonlyArray<readonly [string, boolean]> = [
  ['Message', false],
  ['MessageId', false],
  ['SubscribeURL', false],
  ['Timestamp', false],
  ['Token', false],
  ['TopicArn', false],
  ['Type', false],
];
const SIGNED_FIELDS: Record<MessageType, ReadonlyArray<readonly [string, boolean]>> = {
  Notification: [
    ['Message', false],
    ['MessageId', false],
    ['Subject', true],
    ['Timestamp', false],
    ['TopicArn', false],
    ['Type', false],
  ],
  SubscriptionConfirmation: CONFIRMATION_FIELDS,
  UnsubscribeConfirmation: CONFIRMATION_FIELDS,
};

function isMessageType(value: unknown): value is MessageType {
  return typeof value === 'string' && Object.hasOwn(SIGNED_FIELDS, value);
}

/** The message of the body, or why it is not a signed SNS message. */
function parseMessage(request: SignedRequest): SnsMessage | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(request.body.toString('utf8'));
  } catch {
    return 'body is not an SNS message (not JSON)';
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return 'body is not an SNS message (not a JSON object)';
  }
  const fields = parsed as Record<string, unknown>;
  const type = fields.Type;
  if (!isMessageType(type)) return 'body is not an SNS message (Type is not a signed message type)';
  const headerType = header(request, 'x-amz-sns-message-type');
  if (headerType !== undefined && headerType !== type) {
    return 'header x-amz-sns-message-type does not match the message Type';
  }
  const version = fields.SignatureVersion;
  if (version !== '1' && version !== '2') return 'unsupported SignatureVersion: expected "1" or "2"';
  const signature = fields.Signature;
  const certificateUrl = fields.SigningCertURL;
  if (typeof signature !== 'string') return 'missing Signature in the message';
  if (typeof certificateUrl !== 'string') return 'missing SigningCertURL in the message';
  const signed = new Map<string, string>();
  for (const [name, optional] of SIGNED_FIELDS[type]) {
    const value = fields[name];
    if (typeof value === 'string') signed.set(name, value);
    else if (!optional) return `missing ${name} in the message`;
  }
  return {
    Type: type,
    SignatureVersion: version,
    Signature: signature,
    SigningCertURL: certificateUrl,
    signed,
  };
}

/** "Name\nValue\n" for each signed field present, in signing order. */
function stringToSign(message: SnsMessage): string {
  return [...message.signed].map(([name, value]) => `${name}\n${value}\n`).join('');
}

function outsideValidity(certificate: X509Certificate, nowMs: number): string | undefined {
  if (nowMs < Date.parse(certificate.validFrom)) return 'the signing certificate is not valid yet';
  if (nowMs > Date.parse(certificate.validTo)) return 'the signing certificate has expired';
  return undefined;
}

function verifies(
  algorithm: 'sha1' | 'sha256',
  text: string,
  certificate: X509Certificate,
  signature: Buffer,
): boolean {
  try {
    return verify(algorithm, Buffer.from(text, 'utf8'), certificate.publicKey, signature);
  } catch {
    return false; // e.g. a certificate whose key cannot verify RSA signatures
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// ---- the default certificate fetcher --------------------------------------------------------

const MAX_CERTIFICATE_BYTES = 64 * 1024;
const FETCH_TIMEOUT_MS = 10_000;
/** SNS uses a handful of certificates (one per region, rotated rarely): a small cache is plenty. */
const MAX_CACHED_CERTIFICATES = 64;
const certificates = new Map<string, Promise<string>>();

/**
 * The PEM at `url` by HTTPS GET (TLS verified, no redirects followed), cached per URL; a failed
 * fetch is not cached. Refuses any URL that is not an SNS signing certificate URL.
 */
export function fetchSnsCertificate(url: string): Promise<string> {
  const cached = certificates.get(url);
  if (cached !== undefined) return cached;
  const pending = download(url);
  certificates.set(url, pending);
  pending.catch(() => certificates.delete(url));
  if (certificates.size > MAX_CACHED_CERTIFICATES) {
    const oldest = certificates.keys().next().value;
    if (oldest !== undefined) certificates.delete(oldest);
  }
  return pending;
}

async function download(url: string): Promise<string> {
  if (!isSnsSigningCertUrl(url)) throw new Error('not an SNS signing certificate URL');
  const response = await undiciRequest(url, {
    method: 'GET',
    headersTimeout: FETCH_TIMEOUT_MS,
    bodyTimeout: FETCH_TIMEOUT_MS,
  });
  if (response.statusCode !== 200) {
    await response.body.dump();
    throw new Error(`GET ${url} answered ${response.statusCode}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    size += bytes.length;
    if (size > MAX_CERTIFICATE_BYTES) {
      response.body.destroy();
      throw new Error(`GET ${url}: certificate larger than ${MAX_CERTIFICATE_BYTES} bytes`);
    }
    chunks.push(bytes);
  }
  const pem = Buffer.concat(chunks).toString('utf8');
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new Error(`GET ${url}: not a PEM certificate`);
  return pem;
}
