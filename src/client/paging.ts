import type { Transport } from './transport.js';

export interface ListParams {
  /** Page size, 1..100 (server default 100). */
  limit?: number;
  beforeId?: string;
  /** Equality filters a collection offers, e.g. `{ ip_policy_id }` on IP policy rules. */
  filters?: Record<string, string>;
}

export type ListPage<K extends string, Item> = { [P in K]: Item[] } & {
  uri: string;
  next_page_uri: string | null;
};

/** Every item of a collection, newest first, fetching pages as the caller iterates. */
export async function* iteratePages<K extends string, Item>(
  transport: Transport,
  path: string,
  key: K,
  params: ListParams = {},
): AsyncGenerator<Item, void, undefined> {
  let next: string | null = transport
    .url(path, { limit: params.limit, before_id: params.beforeId, ...params.filters })
    .toString();
  while (next !== null) {
    const page: ListPage<K, Item> = await transport.send('GET', next);
    yield* page[key];
    next = page.next_page_uri;
  }
}
