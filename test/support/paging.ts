import { expect } from 'vitest';
import type { Database } from '../../src/server/store/tables.js';
import type { ApiResponse, TestServer } from './server.js';

/** The member of a list response that holds its items, e.g. `'credentials'`. */
type ItemsKey<List> = { [K in keyof List]: List[K] extends { id: string }[] ? K : never }[keyof List];

/**
 * GETs `first`, then each `next_page_uri` until it is null, expecting 200 every time. `check` sees
 * every page after its ids were added to `seen`; the result is every id in the order served.
 */
export async function walkPages<List extends { next_page_uri: string | null }>(
  t: TestServer,
  first: string,
  itemsKey: ItemsKey<List>,
  check: (page: ApiResponse<List>, seen: string[]) => void = () => {},
): Promise<{ seen: string[]; pages: number }> {
  const seen: string[] = [];
  let pages = 0;
  let next: string | null = first;
  while (next !== null) {
    const page: ApiResponse<List> = await t.api<List>('GET', next);
    expect(page.status).toBe(200);
    const items = page.body[itemsKey] as { id: string }[];
    seen.push(...items.map((item) => item.id));
    check(page, seen);
    next = page.body.next_page_uri;
    pages++;
  }
  return { seen, pages };
}

/** How many rows `table` holds: a walk over the whole collection must have seen exactly that many. */
export async function countRows(t: TestServer, table: keyof Database): Promise<number> {
  const { n } = await t.server.app.edgeward.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(n);
}
