import type { SelectQueryBuilder } from 'kysely';
import type { Database } from './tables.js';

export interface PageRequest {
  limit: number;
  beforeId?: string | undefined;
}

export interface Page<Row> {
  rows: Row[];
  /** Id to pass as `before_id` for the next page, or null when this is the last page. */
  nextBeforeId: string | null;
}

/**
 * What a `before_id` of the list whose ids are `<idPrefix>_` and base62 characters must look like.
 * Any such string is a place in the list's order (the item may since have been deleted); anything
 * else sorts before or after every id and would answer an empty or a whole page as if that were
 * the list, so the list's query schema refuses it: a 400 naming the parameter.
 */
export function cursorOfList(idPrefix: string): { pattern: RegExp; message: string } {
  return {
    pattern: new RegExp(`^${idPrefix}_[0-9A-Za-z]+$`),
    message: `must be an id of this list (${idPrefix}_ and letters or digits)`,
  };
}

/**
 * Newest first, `before_id` exclusive. Ids are time-ordered and sort as strings, so paging is a
 * range scan on the primary key and stays correct when the `before_id` item has been deleted.
 * One extra row is read to know whether a next page exists.
 */
export async function fetchPage<T extends keyof Database, Row extends { id: string }>(
  query: SelectQueryBuilder<Database, T, Row>,
  idColumn: string,
  page: PageRequest,
): Promise<Page<Row>> {
  // Kysely cannot type a column reference that is generic over the table; the column is ours, not user input.
  const column = idColumn as never;
  let q = query.orderBy(column, 'desc').limit(page.limit + 1);
  if (page.beforeId !== undefined) q = q.where(column, '<', page.beforeId as never);
  return pageOf(await q.execute(), page.limit);
}

/** A page from up to `limit + 1` rows read newest first: the extra row only says there is more. */
export function pageOf<Row extends { id: string }>(rows: Row[], limit: number): Page<Row> {
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  return { rows: pageRows, nextBeforeId: hasMore ? (pageRows.at(-1)?.id ?? null) : null };
}
