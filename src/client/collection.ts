import { iteratePages, type ListPage, type ListParams } from './paging.js';
import type { Transport } from './transport.js';

export interface CreateOptions {
  /** Makes the create safe to retry: the server returns the original response for the same key and body. */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

/** The endpoints every collection has: create, get, update (PATCH), delete, list, iterate. */
export class Collection<K extends string, Item, Create, Update> {
  constructor(
    protected readonly transport: Transport,
    readonly path: string,
    readonly listKey: K,
  ) {}

  create(body: Create, options: CreateOptions = {}): Promise<Item> {
    return this.transport.send('POST', this.path, { body, ...options });
  }

  get(id: string): Promise<Item> {
    return this.transport.send('GET', this.itemPath(id));
  }

  update(id: string, body: Update): Promise<Item> {
    return this.transport.send('PATCH', this.itemPath(id), { body });
  }

  async delete(id: string): Promise<void> {
    await this.transport.send('DELETE', this.itemPath(id));
  }

  /** One page; follow `next_page_uri` with `iterate` instead of by hand. */
  list(params: ListParams = {}): Promise<ListPage<K, Item>> {
    return this.transport.send('GET', this.path, {
      query: { limit: params.limit, before_id: params.beforeId, ...params.filters },
    });
  }

  iterate(params: ListParams = {}): AsyncGenerator<Item, void, undefined> {
    return iteratePages<K, Item>(this.transport, this.path, this.listKey, params);
  }

  protected itemPath(id: string): string {
    return `${this.path}/${encodeURIComponent(id)}`;
  }
}
