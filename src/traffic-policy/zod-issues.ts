import type { z } from 'zod';
import { PolicyError, type PolicyPath } from './errors.js';

function article(expected: string): string {
  return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`;
}

function received(input: unknown): string {
  if (input === null) return 'null';
  return Array.isArray(input) ? 'array' : typeof input;
}

/** The first issue of `error` as a PolicyError under `base`, worded like the API's own messages. */
export function policyErrorFromZod(error: z.ZodError, base: PolicyPath): PolicyError {
  const issue = error.issues[0];
  if (!issue) return new PolicyError(base, 'invalid', { cause: error });
  const path = [...base, ...issue.path.map((part) => (typeof part === 'number' ? part : String(part)))];
  if (issue.code === 'unrecognized_keys') {
    return new PolicyError([...path, issue.keys[0] ?? ''], 'unknown field', { cause: error });
  }
  if (issue.input === undefined && (issue.code === 'invalid_type' || issue.code === 'invalid_value')) {
    return new PolicyError(path, 'is required', { cause: error });
  }
  // A schema's own message beats zod's generic wording.
  if (!issue.message.startsWith('Invalid ')) return new PolicyError(path, issue.message, { cause: error });
  if (issue.code === 'invalid_type') {
    return new PolicyError(path, `must be ${article(issue.expected)}, got ${received(issue.input)}`, {
      cause: error,
    });
  }
  if (issue.code === 'invalid_value') {
    return new PolicyError(path, `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`, {
      cause: error,
    });
  }
  return new PolicyError(path, issue.message, { cause: error });
}

/** `schema.parse` with `reportInput`, throwing a PolicyError under `base`. */
export function parseAt<S extends z.ZodType>(schema: S, value: unknown, base: PolicyPath): z.output<S> {
  const result = schema.safeParse(value, { reportInput: true });
  if (!result.success) throw policyErrorFromZod(result.error, base);
  return result.data;
}
