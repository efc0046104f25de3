import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { SignedRequest, WebhookVerdict } from './types.js';

/** Largest body the edge buffers to verify (a bigger one is refused with 413 by the caller). */
export const MAX_WEBHOOK_BODY_BYTES = 10 * 1024 * 1024;

/** The replay window the providers that document one ask for (Stripe, Slack, HubSpot, Standard Webhooks). */
export const FIVE_MINUTES_S = 300;

// Frozen: one shared object is handed to every caller.
export const OK: WebhookVerdict = Object.freeze({ ok: true });

export function fail(reason: string): WebhookVerdict {
  return { ok: false, reason };
}

export function missingHeader(name: string): WebhookVerdict {
  return fail(`missing header ${name}`);
}

export const SIGNATURE_MISMATCH = 'signature mismatch';

/** A header's value by its (any-case) name; repeated fields are joined with ", " as node joins most. */
export function header(request: SignedRequest, name: string): string | undefined {
  const value = request.headers[name.toLowerCase()];
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join(', ') : value;
}

/** The media type of the body, lower-cased, without parameters (`''` when there is none). */
export function mediaType(request: SignedRequest): string {
  return (header(request, 'content-type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

/** The `name=value` parameters of a content type (e.g. the multipart boundary), names lower-cased. */
export function mediaTypeParameter(request: SignedRequest, name: string): string | undefined {
  const [, ...parameters] = (header(request, 'content-type') ?? '').split(';');
  for (const parameter of parameters) {
    const equals = parameter.indexOf('=');
    if (equals < 0 || parameter.slice(0, equals).trim().toLowerCase() !== name) continue;
    const value = parameter.slice(equals + 1).trim();
    return value.startsWith('"') && value.endsWith('"') && value.length >= 2 ? value.slice(1, -1) : value;
  }
  return undefined;
}

/** The decoded fields of an `application/x-www-form-urlencoded` body, in order. */
export function formFields(body: Buffer): Array<[string, string]> {
  return [...new URLSearchParams(body.toString('utf8'))];
}

export type HashAlgorithm = 'sha1' | 'sha256';

/** HMAC of the parts concatenated, as raw bytes (strings as UTF-8). */
export function hmac(
  algorithm: HashAlgorithm,
  key: string | Buffer,
  ...parts: Array<string | Buffer>
): Buffer {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

export function sha256(...parts: Array<string | Buffer>): Buffer {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest();
}

const HEX = /^(?:[0-9a-fA-F]{2})+$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Hex as bytes; undefined when it is not hex (Buffer.from would silently stop at the first bad digit). */
export function decodeHex(text: string): Buffer | undefined {
  const trimmed = text.trim();
  return HEX.test(trimmed) ? Buffer.from(trimmed, 'hex') : undefined;
}

/** Standard padded base64 as bytes; undefined when it is not (Buffer.from skips bad characters). */
export function decodeBase64(text: string): Buffer | undefined {
  const trimmed = text.trim();
  return trimmed.length > 0 && BASE64.test(trimmed) ? Buffer.from(trimmed, 'base64') : undefined;
}

/**
 * Whether any provided signature equals any expected one. Every pair is compared (no early exit)
 * and each comparison is constant-time; only the lengths, which are public, are compared plainly.
 */
export function anyMatch(expected: readonly Buffer[], provided: readonly (Buffer | undefined)[]): boolean {
  let matched = false;
  for (const candidate of provided) {
    if (candidate === undefined) continue;
    for (const digest of expected) {
      if (candidate.length === digest.length && timingSafeEqual(candidate, digest)) matched = true;
    }
  }
  return matched;
}

/** Constant-time equality of two secrets of any length: their SHA-256 digests are compared. */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}

/** `key=value` items of a list such as `t=1,v1=ab,v1=cd` (split at the first `=` of each item). */
export function keyValueList(value: string, separator = ','): Array<[string, string]> {
  return value
    .split(separator)
    .map((item) => item.trim())
    .filter((item) => item.length > 0)
    .map((item) => {
      const equals = item.indexOf('=');
      return equals < 0 ? [item, ''] : [item.slice(0, equals).trim(), item.slice(equals + 1).trim()];
    });
}

/** A whole number of seconds (or ms) since the epoch, or undefined. */
export function parseUnixTime(text: string): number | undefined {
  const trimmed = text.trim();
  return /^\d{1,15}$/.test(trimmed) ? Number(trimmed) : undefined;
}

/**
 * Why a signed time is outside `toleranceSeconds` either side of now (a far-future stamp is as
 * suspect as an old one), or undefined when it is inside. `name` says where the time came from.
 */
export function outsideTolerance(
  signedAtMs: number,
  nowMs: number,
  toleranceSeconds: number,
  name: string,
): string | undefined {
  const ageMs = nowMs - signedAtMs;
  if (ageMs > toleranceSeconds * 1000) {
    return `timestamp too old: ${name} is more than ${toleranceSeconds} s in the past`;
  }
  if (ageMs < -toleranceSeconds * 1000) {
    return `timestamp in the future: ${name} is more than ${toleranceSeconds} s ahead`;
  }
  return undefined;
}
