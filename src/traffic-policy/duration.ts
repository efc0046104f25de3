import { z } from 'zod';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const DURATION = /^([1-9]\d{0,8})(ms|s|m|h)$/;
/** A window longer than a day would keep counters for keys long gone. */
const MAX_MS = 86_400_000;
const MESSAGE = "must be a duration such as '500ms', '60s', '5m' or '1h' (at most 24h)";

/** `'60s'` -> 60000 milliseconds. */
export const duration = z.string().transform((text, ctx) => {
  const match = DURATION.exec(text);
  const ms = match ? Number(match[1]) * (UNITS[match[2] as string] ?? 0) : 0;
  if (ms <= 0 || ms > MAX_MS) {
    ctx.addIssue({ code: 'custom', message: MESSAGE });
    return z.NEVER;
  }
  return ms;
});
