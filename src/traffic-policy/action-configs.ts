import { z } from 'zod';
import { duration } from './duration.js';
import { headerMap, headerNameList, headerValue } from './headers.js';

/**
 * The `config` of each action type: strict objects, so a misspelt field is refused rather than
 * ignored. A null or absent config reads as `{}`.
 */

function statusCode(min: number, max: number) {
  const range = `must be an HTTP status code from ${min} to ${max}`;
  return z.number().int('must be a whole number').min(min, range).max(max, range);
}

/** The edge frames replies itself. */
const FRAMING_HEADERS = ['content-length', 'transfer-encoding', 'connection'];

const MAX_BODY = 65_536;
const regexSource = z.string().min(1, 'must not be empty').max(1024, 'must be at most 1024 characters');
const celSource = z.string().min(1, 'must not be empty').max(4096, 'must be at most 4096 characters');

export const denyConfig = z.strictObject({ status_code: statusCode(400, 599).default(403) });

/** A TCP or TLS connection is simply closed: there is nothing to configure. */
export const connectionDenyConfig = z.strictObject({});

export const customResponseConfig = z.strictObject({
  status_code: statusCode(200, 599),
  body: z
    .string()
    .refine((body) => Buffer.byteLength(body, 'utf8') <= MAX_BODY, `must be at most ${MAX_BODY} bytes`)
    .default(''),
  headers: headerMap(FRAMING_HEADERS).default({}),
});

export const addHeadersConfig = z.strictObject({
  headers: headerMap(FRAMING_HEADERS).refine(
    (headers) => Object.keys(headers).length > 0,
    'must name at least one header',
  ),
});

export const removeHeadersConfig = z.strictObject({ headers: headerNameList });

const REDIRECT_CODES = [301, 302, 303, 307, 308] as const;

export const redirectConfig = z.strictObject({
  to: headerValue.min(1, 'must not be empty'),
  from: regexSource.optional(),
  status_code: z
    .number()
    .refine((code) => (REDIRECT_CODES as readonly number[]).includes(code), {
      message: `must be one of ${REDIRECT_CODES.join(', ')}`,
    })
    .default(302),
});

export const urlRewriteConfig = z.strictObject({
  from: regexSource,
  to: z.string().min(1, 'must not be empty').max(4096, 'must be at most 4096 characters'),
});

export const rateLimitConfig = z.strictObject({
  name: z.string().min(1, 'must not be empty').max(255, 'must be at most 255 characters'),
  algorithm: z.literal('sliding_window', { error: "must be 'sliding_window', the only algorithm" }),
  capacity: z
    .number()
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(1_000_000_000, 'must be at most 1000000000'),
  rate: duration,
  bucket_key: z
    .array(celSource)
    .min(1, 'must list at least one expression')
    .max(10, 'must list at most 10 expressions'),
});

export const logConfig = z.strictObject({
  metadata: z.record(z.string(), z.unknown()).default({}),
});
