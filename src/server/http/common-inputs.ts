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

function quickListQuery(value: unknown): ListQuery | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  for (const key in value) if (key !== 'limit' && key !== 'before_id') return undefined;
  const { limit, before_id: beforeId } = value as { limit?: unknown; before_id?: unknown };
  let pageSize = DEFAULT_LIMIT;
  if (limit !== undefined) {
    if (typeof limit !== 'string' || !LIMIT.test(limit)) return undefined;
    pageSize = Number(limit);
    if (pageSize > MAX_LIMIT) return undefined;
  }
  if (beforeId === undefined) return { limit: pageSize };
  if (typeof beforeId !== 'string' || beforeId.length === 0) return undefined;
  return { limit: pageSize, before_id: beforeId };
}

const QUICK: ReadonlyMap<z.ZodType, QuickParse> = new Map<z.ZodType, QuickParse>([
  [idParams, quickIdParams],
  [listQuery, quickListQuery],
]);

/** The precompiled check of `schema`, when it is one of the common inputs above. */
export function quickParserOf(schema: z.ZodType | undefined): QuickParse | undefined {
  return schema === undefined ? undefined : QUICK.get(schema);
}
