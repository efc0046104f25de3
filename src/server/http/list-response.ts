import type { ListQuery } from '../../schemas/common.js';
import type { Page } from '../store/paging.js';
import type { RequestContext } from './context.js';

/** Builds `{<key>: items, uri, next_page_uri}` for a collection at `path` (e.g. `/ip_policies`). */
export function listResponse<K extends string, Row extends { id: string }, Item>(
  ctx: RequestContext,
  key: K,
  path: string,
  query: ListQuery,
  page: Page<Row>,
  toWire: (row: Row) => Item,
  /** Filters the page was read with, carried into `next_page_uri`. */
  filters: Record<string, string> = {},
): { [P in K]: Item[] } & { uri: string; next_page_uri: string | null } {
  const filterQuery = Object.entries(filters)
    .map(([param, value]) => `&${encodeURIComponent(param)}=${encodeURIComponent(value)}`)
    .join('');
  const next =
    page.nextBeforeId === null
      ? null
      : ctx.url(
          `${path}?before_id=${encodeURIComponent(page.nextBeforeId)}&limit=${query.limit}${filterQuery}`,
        );
  return { [key]: page.rows.map(toWire), uri: ctx.url(path), next_page_uri: next } as {
    [P in K]: Item[];
  } & { uri: string; next_page_uri: string | null };
}
