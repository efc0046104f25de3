import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { ApiError } from '../errors/api-error.js';
import { checkResponse } from './response-check.js';

const item = z.strictObject({
  id: z.string(),
  tags: z.array(z.string()),
  region: z.enum(['us', 'eu']).default('us'),
  note: z.string().nullable(),
});

/** The error `checkResponse` throws for `result`, or undefined when it accepts it. */
function driftOf(schema: z.ZodType | undefined, result: unknown): ApiError | undefined {
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    checkResponse('getThing', schema, result);
    return undefined;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw new Error('checkResponse threw something other than an ApiError', { cause: error });
  } finally {
    stderr.mockRestore();
  }
}

describe('checkResponse', () => {
  it('accepts a result that is exactly what the schema describes', () => {
    expect(driftOf(item, { id: 'x', tags: ['a'], region: 'eu', note: null })).toBeUndefined();
    expect(driftOf(undefined, undefined)).toBeUndefined();
  });

  it('refuses a result the schema rejects, naming the member, as a 500', () => {
    const error = driftOf(item, { id: 'x', tags: 'a', region: 'us', note: null });
    expect(error?.statusCode).toBe(500);
    expect(error?.code).toBe('ERR_EDGEWARD_800');
    expect(error?.message).toMatch(/^response of getThing does not match its schema: .*tags/s);
  });

  it('refuses a member the schema does not have, even where parsing would strip it', () => {
    const loose = z.object({ id: z.string() });
    expect(driftOf(loose, { id: 'x', secret: 's' })?.message).toMatch(/\.secret \(stripped\)/);
  });

  it('refuses a result that leans on a default: the wire would lack a member the document requires', () => {
    expect(driftOf(item, { id: 'x', tags: [], note: null })?.message).toMatch(/\.region \(added\)/);
  });

  it('checks the JSON the client receives: an undefined member is a missing one', () => {
    expect(driftOf(item, { id: 'x', tags: [], region: 'us', note: undefined })?.message).toMatch(/note/);
  });

  it('refuses a body from a route without a response schema, and no body from one with', () => {
    expect(driftOf(undefined, { id: 'x' })?.message).toMatch(
      /without a response schema answered with a body/,
    );
    expect(driftOf(item, undefined)?.message).toMatch(/no body/);
  });
});
