import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { ApiError } from '../errors/api-error.js';

/**
 * Checks what a handler answers against the route's response schema as the OpenAPI document states
 * it (the schema's output form). The JSON a client would receive must parse, and parsing must not
 * change it: a default filled in, an unknown member stripped or a value transformed all mean the
 * wire shows something the document does not describe. Refused with a 500 that says what drifted.
 *
 * Run only when the server is built with `validateResponses` (tests): in production the schemas are
 * documentation and the check would cost a parse per response.
 */
export function checkResponse(operationId: string, schema: z.ZodType | undefined, result: unknown): void {
  const drift = responseDrift(schema, result);
  if (drift === undefined) return;
  const message = `response of ${operationId} does not match its schema: ${drift}`;
  // Test servers run without a logger, so the test output shows the drift only if it is written here.
  process.stderr.write(`${message}\n`);
  throw new ApiError('ERR_EDGEWARD_800', message);
}

/** What is wrong with `result` as a response of `schema`, or undefined when nothing is. */
function responseDrift(schema: z.ZodType | undefined, result: unknown): string | undefined {
  if (!schema) {
    return result === undefined ? undefined : 'a route without a response schema answered with a body';
  }
  if (result === undefined) return 'no body, but the route documents one';
  // What the client receives: members set to undefined vanish, dates become strings.
  const wire: unknown = JSON.parse(JSON.stringify(result));
  const parsed = schema.safeParse(wire);
  if (!parsed.success) return z.prettifyError(parsed.error);
  if (isDeepStrictEqual(parsed.data, wire)) return undefined;
  return `parsing changes it at ${firstDifference(wire, parsed.data, '') || 'the top level'} (a default, a stripped member or a transform the wire does not show)`;
}

/** The path of the first place `a` and `b` differ, e.g. `.routes[0].backend`. */
function firstDifference(a: unknown, b: unknown, path: string): string {
  if (isDeepStrictEqual(a, b)) return '';
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return `${path} (length ${a.length}, parsed ${b.length})`;
    for (const [index, item] of a.entries()) {
      const found = firstDifference(item, b[index], `${path}[${index}]`);
      if (found) return found;
    }
    return path;
  }
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return path;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  for (const key of new Set([...Object.keys(left), ...Object.keys(right)])) {
    if (!(key in right)) return `${path}.${key} (stripped)`;
    if (!(key in left)) return `${path}.${key} (added)`;
    const found = firstDifference(left[key], right[key], `${path}.${key}`);
    if (found) return found;
  }
  return path;
}
