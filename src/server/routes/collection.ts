import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { idParams, listQuery } from '../../schemas/common.js';
import { newId } from '../crypto/ids.js';
import { notFound } from '../errors/api-error.js';
import { recordEvent } from '../events/outbox.js';
import type { RequestContext } from '../http/context.js';
import { listResponse } from '../http/list-response.js';
import { defineRoute } from '../http/route.js';
import type { Db } from '../store/database.js';
import { fetchPage } from '../store/paging.js';
import type { Database } from '../store/tables.js';

type TableWithId = { [T in keyof Database]: Database[T] extends { id: string } ? T : never }[keyof Database];
// Our tables use no Generated/ColumnType wrappers, so a selected row is the table type itself.
export type Row<T extends TableWithId> = Database[T];

/**
 * Kysely cannot type a query that is generic over the table name; every helper here narrows with
 * one cast, on names that are ours, never user input.
 */
// biome-ignore lint/suspicious/noExplicitAny: see above — the cast is confined to this file
type Loose = any;

export async function findRow<T extends TableWithId>(
  db: Db,
  table: T,
  id: string,
): Promise<Row<T> | undefined> {
  return (await (db as Loose).selectFrom(table).selectAll().where('id', '=', id).executeTakeFirst()) as
    | Row<T>
    | undefined;
}

export async function requireRow<T extends TableWithId>(
  db: Db,
  table: T,
  id: string,
  kind: string,
): Promise<Row<T>> {
  const row = await findRow(db, table, id);
  if (!row) throw notFound(kind, id);
  return row;
}

/** Columns of `T` holding the id of the user or bot that owns a row. */
export type OwnerColumn<T extends TableWithId> = {
  [C in keyof Row<T>]: Row<T>[C] extends string ? C : never;
}[keyof Row<T>] &
  string;

/**
 * Whether the caller may see `row`: admins see every row, anyone else only rows whose
 * `ownerColumn` names them (spec, Authentication rule 3). Without an owner column, every row.
 */
function isVisible<T extends TableWithId>(
  ctx: RequestContext,
  row: Row<T>,
  ownerColumn: OwnerColumn<T> | undefined,
): boolean {
  return ownerColumn === undefined || ctx.principal.isAdmin || row[ownerColumn] === ctx.principal.id;
}

/**
 * The row if the caller may see it; a row of someone else is a 404 like an unknown id, so its
 * existence is not revealed.
 */
export async function requireVisibleRow<T extends TableWithId>(
  ctx: RequestContext,
  table: T,
  id: string,
  kind: string,
  ownerColumn: OwnerColumn<T> | undefined,
): Promise<Row<T>> {
  const row = await findRow(ctx.db, table, id);
  if (!row || !isVisible(ctx, row, ownerColumn)) throw notFound(kind, id);
  return row;
}

export async function deleteRow<T extends TableWithId>(db: Db, table: T, id: string): Promise<void> {
  await (db as Loose).deleteFrom(table).where('id', '=', id).execute();
}

/**
 * Deletes the rows of `table` whose `column` is `value` (a cascade) and records a
 * `<resource>_deleted.v0` event for each, oldest first: subscribers see every removed row, as if
 * each had been deleted on its own.
 */
export async function deleteDependents<T extends TableWithId>(
  db: Db,
  table: T,
  column: keyof Row<T> & string,
  value: string,
  resource: string,
): Promise<void> {
  const rows = (await (db as Loose)
    .selectFrom(table)
    .select('id')
    .where(column, '=', value)
    .orderBy('id')
    .execute()) as { id: string }[];
  if (rows.length === 0) return;
  await (db as Loose).deleteFrom(table).where(column, '=', value).execute();
  for (const { id } of rows) await recordEvent(db, { resource, action: 'deleted' }, id, undefined);
}

export async function updateRow<T extends TableWithId>(
  db: Db,
  table: T,
  id: string,
  changes: Partial<Row<T>>,
): Promise<void> {
  const defined = Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined));
  if (Object.keys(defined).length === 0) return;
  await (db as Loose).updateTable(table).set(defined).where('id', '=', id).execute();
}

/** The columns shared by resources with a description and metadata (see `describedResourceFields`). */
interface DescribedRow {
  id: string;
  created_at: string;
  description: string;
  metadata: string;
}

/** A new row's id and creation time, with the body's description and metadata ('' when omitted). */
export function newDescribedRow(
  prefix: string,
  body: { description?: string; metadata?: string },
  ctx: RequestContext,
): DescribedRow {
  return {
    id: newId(prefix),
    created_at: ctx.now(),
    description: body.description ?? '',
    metadata: body.metadata ?? '',
  };
}

/** The leading `id, uri, created_at, description, metadata` of the read form of a row under `path`. */
export function describedToWire(row: DescribedRow, ctx: RequestContext, path: string) {
  return {
    id: row.id,
    uri: ctx.url(`${path}/${row.id}`),
    created_at: row.created_at,
    description: row.description,
    metadata: row.metadata,
  };
}

export async function insertRow<T extends TableWithId>(db: Db, table: T, row: Row<T>): Promise<void> {
  await (db as Loose).insertInto(table).values(row).execute();
}

export interface CollectionSpec<T extends TableWithId, Item extends z.ZodType, List extends z.ZodType> {
  table: T;
  /** Collection path, e.g. `/ip_policies`. */
  path: string;
  listKey: string;
  /** Human name used in messages: "IP policy with id ... not found". */
  kind: string;
  /** Operation id stem: `IPPolicy` -> getIPPolicy, listIPPolicies (plural given). */
  name: string;
  plural: string;
  tag: string;
  item: Item;
  list: List;
  /** May be async when the read form gathers more than the row (an HTTPS edge lists its routes). */
  toWire(row: Row<T>, ctx: RequestContext): z.input<Item> | Promise<z.input<Item>>;
  /**
   * The read forms of a whole page, in row order, when gathering more than the row is cheaper for
   * many rows at once than row by row (one query for the routes of every edge of the page).
   */
  toWireMany?(rows: Row<T>[], ctx: RequestContext): Promise<z.input<Item>[]>;
  /** Runs in the delete transaction before the row goes: refuse (409) or cascade. */
  beforeDelete?(row: Row<T>, ctx: RequestContext): Promise<void>;
  /** Collections whose items are not deleted through the API (tunnel sessions are stopped instead). */
  skipDelete?: boolean;
  /** Singular resource name of the `<resource>_deleted.v0` event a delete records. */
  eventResource?: string;
  /**
   * The column naming the owner (user or bot) of a row: non-admins then list, get and delete only
   * their own rows; anyone else's is a 404, the same as an unknown id.
   */
  ownerColumn?: OwnerColumn<T>;
  /** Runs before a DELETE looks the row up, so a caller without permission learns nothing of which ids exist. */
  authorizeDelete?(ctx: RequestContext): void;
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

/**
 * The list query of a collection: paging plus its filters, each an optional non-empty string.
 * Typed as the paging query alone: the handler reads the filters by name from `spec.filters`.
 */
function listQueryOf<T extends TableWithId>(filters: readonly ListFilter<T>[] | undefined): typeof listQuery {
  if (!filters) return listQuery;
  const extended = listQuery.extend(
    Object.fromEntries(
      filters.map((filter) => [
        filter.param,
        z.string().min(1).optional().meta({ description: filter.description }),
      ]),
    ),
  );
  return extended as unknown as typeof listQuery;
}

export interface UpdateSpec<T extends TableWithId, Body extends z.ZodType, Item extends z.ZodType> {
  table: T;
  /** Collection path, e.g. `/ip_policies`; the route is `PATCH <path>/:id`. */
  path: string;
  /** Human name used in messages: "IP policy with id ... not found". */
  kind: string;
  /** Operation id stem: `IPPolicy` -> updateIPPolicy. */
  name: string;
  tag: string;
  summary: string;
  body: Body;
  item: Item;
  /** Runs before the row is looked up, so a caller without permission learns nothing of which ids exist. */
  authorize?(ctx: RequestContext): void;
  /** The columns to set (undefined ones are left alone); may refuse the update by throwing an ApiError. */
  toChanges(
    body: z.output<Body>,
    row: Row<T>,
    ctx: RequestContext,
  ): Partial<Row<T>> | Promise<Partial<Row<T>>>;
  toWire(row: Row<T>, ctx: RequestContext): z.input<Item> | Promise<z.input<Item>>;
  /** Singular resource name of the `<resource>_updated.v0` event an update records. */
  eventResource?: string;
  /** As in `CollectionSpec`: non-admins update only rows this column says they own (404 otherwise). */
  ownerColumn?: OwnerColumn<T>;
}

/** PATCH one item: 404 if unknown, apply the changes, answer with the item as it now stands. */
export function defineUpdateRoute<T extends TableWithId, Body extends z.ZodType, Item extends z.ZodType>(
  app: FastifyInstance,
  spec: UpdateSpec<T, Body, Item>,
): void {
  defineRoute(app, {
    method: 'PATCH',
    url: `${spec.path}/:id`,
    operationId: `update${spec.name}`,
    summary: spec.summary,
    tag: spec.tag,
    params: idParams,
    body: spec.body,
    status: 200,
    response: spec.item,
    ...(spec.eventResource ? { event: { resource: spec.eventResource, action: 'updated' as const } } : {}),
    handler: async ({ params, body, ctx }) => {
      spec.authorize?.(ctx);
      const row = await requireVisibleRow(ctx, spec.table, params.id, spec.kind, spec.ownerColumn);
      await updateRow(ctx.db, spec.table, params.id, await spec.toChanges(body, row, ctx));
      return spec.toWire(await requireRow(ctx.db, spec.table, params.id, spec.kind), ctx);
    },
  });
}

/** GET list, GET one and DELETE: the same for every collection, so written once. */
export function defineCollectionReads<T extends TableWithId, Item extends z.ZodType, List extends z.ZodType>(
  app: FastifyInstance,
  spec: CollectionSpec<T, Item, List>,
): void {
  defineRoute(app, {
    method: 'GET',
    url: spec.path,
    operationId: `list${spec.plural}`,
    summary: `List ${spec.kind} resources, newest first${spec.ownerColumn ? ': all of them for admins, the caller’s own otherwise' : ''}`,
    tag: spec.tag,
    query: listQueryOf(spec.filters),
    status: 200,
    response: spec.list,
    handler: async ({ query, ctx }) => {
      let select = (ctx.db as Loose).selectFrom(spec.table).selectAll();
      if (spec.ownerColumn !== undefined && !ctx.principal.isAdmin) {
        select = select.where(spec.ownerColumn, '=', ctx.principal.id);
      }
      const applied: Record<string, string> = {};
      for (const filter of spec.filters ?? []) {
        const value = (query as Record<string, unknown>)[filter.param];
        if (typeof value !== 'string') continue;
        select = select.where(filter.column, '=', value);
        applied[filter.param] = value;
      }
      const page = await fetchPage<T, Row<T>>(select, 'id', {
        limit: query.limit,
        beforeId: query.before_id,
      });
      const items = spec.toWireMany
        ? await spec.toWireMany(page.rows, ctx)
        : await Promise.all(page.rows.map((row) => spec.toWire(row, ctx)));
      const byId = new Map(page.rows.map((row, index) => [row.id, items[index]]));
      return listResponse(
        ctx,
        spec.listKey,
        spec.path,
        query,
        page,
        (row) => byId.get(row.id),
        applied,
      ) as z.input<List>;
    },
  });
  defineRoute(app, {
    method: 'GET',
    url: `${spec.path}/:id`,
    operationId: `get${spec.name}`,
    summary: `Get a ${spec.kind}`,
    tag: spec.tag,
    params: idParams,
    status: 200,
    response: spec.item,
    handler: async ({ params, ctx }) =>
      spec.toWire(await requireVisibleRow(ctx, spec.table, params.id, spec.kind, spec.ownerColumn), ctx),
  });
  if (spec.skipDelete) return;
  defineRoute(app, {
    method: 'DELETE',
    url: `${spec.path}/:id`,
    operationId: `delete${spec.name}`,
    summary: `Delete a ${spec.kind}`,
    tag: spec.tag,
    params: idParams,
    status: 204,
    ...(spec.eventResource ? { event: { resource: spec.eventResource, action: 'deleted' as const } } : {}),
    handler: async ({ params, ctx }) => {
      spec.authorizeDelete?.(ctx);
      const row = await requireVisibleRow(ctx, spec.table, params.id, spec.kind, spec.ownerColumn);
      await spec.beforeDelete?.(row, ctx);
      await deleteRow(ctx.db, spec.table, params.id);
      return undefined;
    },
  });
}
