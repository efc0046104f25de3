import { rateLimitConfig } from '../action-configs.js';
import { formatPolicyPath, PolicyError, PolicyEvaluationError } from '../errors.js';
import { compileExpression } from '../expressions.js';
import { SlidingWindowLimiter } from '../rate-limiter.js';
import { parseAt } from '../zod-issues.js';
import { type ActionCompiler, configPath } from './step.js';

/** A CEL value as part of a bucket key: `"10.0.0.1"`, `443`, `["a","b"]`. */
function keyPart(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint' || typeof value === 'number' || typeof value === 'boolean')
    return String(value);
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return `[${value.map(keyPart).join(',')}]`;
  if (value instanceof Map) return `{${[...value].map(([k, v]) => `${keyPart(k)}:${keyPart(v)}`).join(',')}}`;
  return String(value);
}

/**
 * `rate-limit`: counts requests per bucket (the values of `bucket_key`) in a sliding window of
 * `rate`; over `capacity`, answers 429 with `Retry-After` (terminal). Counters live in the
 * compiled policy, so each edge process limits on its own. A bucket key that fails to evaluate is
 * reported and the request is let through.
 */
export const rateLimit: ActionCompiler = (config, site) => {
  const path = configPath(site);
  const parsed = parseAt(rateLimitConfig, config ?? {}, path);
  const taken = site.rateLimitNames.get(parsed.name);
  if (taken) {
    throw new PolicyError(
      [...path, 'name'],
      `'${parsed.name}' is already the name of the rate limit at ${formatPolicyPath(taken)}; names must be unique in a policy`,
    );
  }
  site.rateLimitNames.set(parsed.name, site.path);
  const keys = parsed.bucket_key.map((source, index) =>
    compileExpression(source, site.stage, [...path, 'bucket_key', index], 'any'),
  );
  const limiter = new SlidingWindowLimiter(parsed.capacity, parsed.rate);
  return (state, rule) => {
    const parts: string[] = [];
    for (const [index, key] of keys.entries()) {
      try {
        parts.push(keyPart(key.evaluate(state.vars())));
      } catch (error) {
        state.hooks.onError(
          new PolicyEvaluationError(
            [...path, 'bucket_key', index],
            rule,
            `the bucket key failed to evaluate, so the request is not counted: ${(error as Error).message}`,
            { cause: error },
          ),
        );
        return 'continue';
      }
    }
    const admission = limiter.take(parts.join('\u0000'), state.hooks.now());
    if (admission.allowed) return 'continue';
    const seconds = Math.max(1, Math.ceil(admission.retryAfterMs / 1000));
    state.respond = { status: 429, headers: { 'retry-after': String(seconds) }, body: '' };
    return 'stop';
  };
};
