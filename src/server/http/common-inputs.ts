import type { z } from 'zod';
import { idParams, type ListQuery, listQuery } from '../../schemas/common.js';

/**
 * What `idParams` and `listQuery` accept, checked without zod: nearly every read passes one of
 * them, and zod's general machinery costs more than the check itself. Each answers exactly what
 * zod would for a valid input, and `undefined` for anything else, which zod then parses, so that
 * errors keep zod's wording.
 */
type QuickParse = (value: unknown) => unknown;

function quickIdParams(value: unknown): z.output<typeof idParams> | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  let keys = 0;
  for (const _key in value) keys++;
  const { id } = value as { id?: unknown };
  if (keys !== 1 || typeof id !== 'string' || id.length === 0) return undefined;
  return { id };
}

const LIMIT = /^[1-9]\d{0,2}$/;
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 100;

/**
 * The list query of a collection whose filters are `filterParams` (each an optional non-empty
 * string, as `listQueryOf` in collection-reads.ts declares them) and whose `before_id` matches
 * `cursor` (any non-empty string without one).
 */
export function quickListQueryWith(filterParams: readonly string[], cursor?: RegExp): QuickParse {
  // Every member but `limit` is an optional non-empty string.
  const optionalStrings = ['before_id', ...filterParams];
  const known = new Set(['limit', ...optionalStrings]);
  return (value) => {
    if (value === null || typeof value !== 'object') return undefined;
    for (const key in value) if (!known.has(key)) return undefined;
    const given = value as Record<string, unknown>;
    const parsed: Record<string, unknown> = { limit: DEFAULT_LIMIT };
    const limit = given.limit;
    if (limit !== undefined) {
      if (typeof limit !== 'string' || !LIMIT.test(limit)) return undefined;
      parsed.limit = Number(limit);
      if ((parsed.limit as number) > MAX_LIMIT) return undefined;
    }
    for (const name of optionalStrings) {
      const member = given[name];
      if (member === undefined) continue;
      if (typeof member !== 'string' || member.length === 0) return undefined;
      if (name === 'before_id' && cursor && !cursor.test(member)) return undefined;
      parsed[name] = member;
    }
    return parsed as ListQuery;
  };
}

const QUICK = new WeakMap<z.ZodType, QuickParse>([
  [idParams, quickIdParams],
  [listQuery, quickListQueryWith([])],
]);

/** Gives `schema` a precompiled check that answers exactly what zod would, or `undefined`. */
export function registerQuickParser(schema: z.ZodType, parse: QuickParse): void {
  QUICK.set(schema, parse);
}

/** The precompiled check of `schema`, when it is one of the common inputs above. */
export function quickParserOf(schema: z.ZodType | undefined): QuickParse | undefined {
  return schema === undefined ? undefined : QUICK.get(schema);
}
