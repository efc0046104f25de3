import { z } from 'zod';

/** Header names and values that actions may set or remove, checked when the policy is written. */

/** RFC 9110 `token`: what a header field name may consist of. */
const HTTP_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const MAX_HEADERS = 100;
const NAME_MESSAGE = 'must be an HTTP header name (RFC 9110 token characters only)';

export const headerName = z
  .string()
  .max(256, 'must be at most 256 characters')
  .regex(HTTP_TOKEN, NAME_MESSAGE);

export const headerValue = z
  .string()
  .max(4096, 'must be at most 4096 characters')
  .refine((value) => !/[\r\n\0]/.test(value), 'must not contain CR, LF or NUL');

/**
 * name -> value. Names are case-insensitive, so `X-A` and `x-a` together are refused; `reserved`
 * names (framing the edge computes itself) are refused too.
 */
export function headerMap(reserved: readonly string[] = []) {
  return z.record(z.string(), headerValue).superRefine((headers, ctx) => {
    const names = Object.keys(headers);
    if (names.length > MAX_HEADERS) {
      ctx.addIssue({ code: 'custom', message: `must have at most ${MAX_HEADERS} headers` });
    }
    const seen = new Map<string, string>();
    for (const name of names) {
      if (!HTTP_TOKEN.test(name) || name.length > 256) {
        ctx.addIssue({
          code: 'custom',
          message: `${JSON.stringify(name)} ${NAME_MESSAGE.replace('must be', 'is not')}`,
        });
        continue;
      }
      const lower = name.toLowerCase();
      if (reserved.includes(lower)) {
        ctx.addIssue({ code: 'custom', path: [name], message: 'is set by the edge and cannot be given' });
      }
      const first = seen.get(lower);
      if (first !== undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `${JSON.stringify(first)} and ${JSON.stringify(name)} name the same header (names are case-insensitive)`,
        });
      }
      seen.set(lower, name);
    }
  });
}

export const headerNameList = z
  .array(headerName)
  .min(1, 'must list at least one header')
  .max(MAX_HEADERS, `must list at most ${MAX_HEADERS} headers`);
