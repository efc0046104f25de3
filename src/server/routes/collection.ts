import type { z } from 'zod';
import { type CollectionPath, idPrefixOf } from '../../schemas/id-prefixes.js';
import type { RequestContext } from '../http/context.js';
import type { OwnerColumn, Row, TableWithId } from '../store/rows.js';

/**
 * The facts of one collection, stated once and given to each of its routes (`defineCreateRoute`,
 * `defineUpdateRoute`, `defineCollectionReads`): where it is stored and served, what it is called,
 * what its read forms look like and who may see its items.
 */
export interface Collection<T extends TableWithId, Item extends z.ZodType, List extends z.ZodType> {
  table: T;
  /** Collection path, e.g. `/ip_policies`; items are at `<path>/:id`. */
  path: CollectionPath;
  /** Prefix of the ids of new items, e.g. `ipp`: the one `ID_PREFIXES` gives for `path`. */
  idPrefix: string;
  /** Human name used in messages: "IP policy with id ... not found". */
  kind: string;
  /** Operation id stem: `IPPolicy` -> createIPPolicy, getIPPolicy, listIPPolicies (plural given). */
  name: string;
  plural: string;
  tag: string;
  /** Singular resource name of the `<resource>_created|updated|deleted.v0` events its changes record. */
  eventResource?: string;
  /** Member of the list response holding the items, e.g. `ip_policies`. */
  listKey: string;
  item: Item;
  list: List;
  /** May be async when the read form gathers more than the row (an HTTPS edge lists its routes). */
  toWire(row: Row<T>, ctx: RequestContext): z.input<Item> | Promise<z.input<Item>>;
  /**
   * The read forms of a whole page, in row order, when gathering more than the row is cheaper for
   * many rows at once than row by row (one query for the routes of every edge of the page).
   */
  toWireMany?(rows: Row<T>[], ctx: RequestContext): Promise<z.input<Item>[]>;
  /**
   * The column naming the owner (user or bot) of a row: non-admins then list, get, update and delete
   * only their own rows; anyone else's is a 404, the same as an unknown id.
   */
  ownerColumn?: OwnerColumn<T>;
  /**
   * Optional `?<param>=<value>` equality filters of the list (`/ip_policy_rules?ip_policy_id=...`),
   * kept in `next_page_uri`, so a client reads one parent's items without paging through all.
   */
  filters?: readonly ListFilter<T>[];
}

export interface ListFilter<T extends TableWithId> {
  param: string;
  column: keyof Row<T> & string;
  description: string;
}

/** A collection's facts; its id prefix is looked up rather than stated again. */
export function defineCollection<T extends TableWithId, Item extends z.ZodType, List extends z.ZodType>(
  facts: Omit<Collection<T, Item, List>, 'idPrefix'>,
): Collection<T, Item, List> {
  return { ...facts, idPrefix: idPrefixOf(facts.path) };
}
