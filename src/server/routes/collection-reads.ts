import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { idParams, listQuery } from '../../schemas/common.js';
import { quickListQueryWith, registerQuickParser } from '../http/common-inputs.js';
import type { RequestContext } from '../http/context.js';
import { listResponse } from '../http/list-response.js';
import { defineRoute } from '../http/route.js';
import { cursorOfList } from '../store/paging.js';
import { type ColumnEquals, deleteRow, fetchRowsPage, type Row, type TableWithId } from '../store/rows.js';
import type { Collection, ListFilter } from './collection.js';
import { requireVisibleRow } from './visible-row.js';

/** A summary other than the one made from the collection's kind. */
interface Summary {
  summary?: string;
}

export interface DeleteRoute<T extends TableWithId> extends Summary {
  /** Runs before the row is looked up, so a caller without permission learns nothing of which ids exist. */
  authorize?(ctx: RequestContext): void;
  /** Runs in the delete transaction before the row goes: refuse (409) or cascade. */
  beforeDelete?(row: Row<T>, ctx: RequestContext): Promise<void>;
}

export interface CollectionReads<T extends TableWithId> {
  /** Runs in the delete transaction before the row goes: refuse (409) or cascade. */
  beforeDelete?(row: Row<T>, ctx: RequestContext): Promise<void>;
  /** Runs before a DELETE looks the row up, so a caller without permission learns nothing of which ids exist. */
  authorizeDelete?(ctx: RequestContext): void;
  /** Collections whose items are not deleted through the API (tunnel sessions are stopped instead). */
  skipDelete?: boolean;
}

/** GET list, GET one and DELETE: the same for every collection, so written once. */
export function defineCollectionReads<T extends TableWithId, Item extends z.ZodType, List extends z.ZodType>(
  app: FastifyInstance,
  collection: Collection<T, Item, List>,
  reads: CollectionReads<T> = {},
): void {
  defineListRoute(app, collection);
  defineGetRoute(app, collection);
  if (reads.skipDelete) return;
  defineDeleteRoute(app, collection, { authorize: reads.authorizeDelete, beforeDelete: reads.beforeDelete });
}

/**
 * The list query of a collection whose ids are `<idPrefix>_…`: paging, with `before_id` one of its
 * ids (the document says which: paging.ts), plus its filters, each an optional non-empty string.
 * Typed as the paging query alone: the handler reads the filters by name from `filters`.
 */
export function listQueryOf<T extends TableWithId>(
  idPrefix: string,
  filters: readonly ListFilter<T>[] = [],
): typeof listQuery {
  const cursor = cursorOfList(idPrefix);
  const extended = listQuery.extend({
    before_id: z
      .string()
      .regex(cursor.pattern, cursor.message)
      .optional()
      .meta({ description: `return items created before this id (${idPrefix}_…)` }),
    ...Object.fromEntries(
      filters.map((filter) => [
        filter.param,
        z.string().min(1).optional().meta({ description: filter.description }),
      ]),
    ),
  });
  registerQuickParser(
    extended,
    quickListQueryWith(
      filters.map((filter) => filter.param),
      cursor.pattern,
    ),
  );
  return extended as unknown as typeof listQuery;
}

/** GET `<path>`: a page of the items the caller may see, newest first, narrowed by the filters given. */
export function defineListRoute<T extends TableWithId, Item extends z.ZodType, List extends z.ZodType>(
  app: FastifyInstance,
  collection: Collection<T, Item, List>,
  route: Summary = {},
): void {
  const { ownerColumn, filters = [] } = collection;
  defineRoute(app, {
    method: 'GET',
    url: collection.path,
    operationId: `list${collection.plural}`,
    summary:
      route.summary ??
      `List ${collection.kind} resources, newest first${ownerColumn ? ': all of them for admins, the caller’s own otherwise' : ''}`,
    tag: collection.tag,
    query: listQueryOf(collection.idPrefix, filters),
    status: 200,
    response: collection.list,
    handler: async ({ query, ctx }) => {
      const where: ColumnEquals<T>[] = [];
      if (ownerColumn !== undefined && !ctx.principal.isAdmin) where.push([ownerColumn, ctx.principal.id]);
      const applied: Record<string, string> = {};
      for (const filter of filters) {
        const value = (query as Record<string, unknown>)[filter.param];
        if (typeof value !== 'string') continue;
        where.push([filter.column, value]);
        applied[filter.param] = value;
      }
      const page = await fetchRowsPage(ctx.db, collection.table, where, {
        limit: query.limit,
        beforeId: query.before_id,
      });
      const items = collection.toWireMany
        ? await collection.toWireMany(page.rows, ctx)
        : await Promise.all(page.rows.map((row) => collection.toWire(row, ctx)));
      const byId = new Map(page.rows.map((row, index) => [row.id, items[index]]));
      return listResponse(
        ctx,
        collection.listKey,
        collection.path,
        query,
        page,
        (row) => byId.get(row.id),
        applied,
      ) as z.input<List>;
    },
  });
}

/** GET `<path>/:id`: the item, or 404 when unknown or (with an owner column) someone else's. */
export function defineGetRoute<T extends TableWithId, Item extends z.ZodType, List extends z.ZodType>(
  app: FastifyInstance,
  collection: Collection<T, Item, List>,
  route: Summary = {},
): void {
  const { table, kind, ownerColumn } = collection;
  defineRoute(app, {
    method: 'GET',
    url: `${collection.path}/:id`,
    operationId: `get${collection.name}`,
    summary: route.summary ?? `Get a ${kind}`,
    tag: collection.tag,
    params: idParams,
    status: 200,
    response: collection.item,
    handler: async ({ params, ctx }) =>
      collection.toWire(await requireVisibleRow(ctx, table, params.id, kind, ownerColumn), ctx),
  });
}

/** DELETE `<path>/:id`: 204, 404 as GET, `<resource>_deleted.v0` recorded. */
export function defineDeleteRoute<T extends TableWithId, Item extends z.ZodType, List extends z.ZodType>(
  app: FastifyInstance,
  collection: Collection<T, Item, List>,
  route: DeleteRoute<T> = {},
): void {
  const { table, kind, ownerColumn } = collection;
  defineRoute(app, {
    method: 'DELETE',
    url: `${collection.path}/:id`,
    operationId: `delete${collection.name}`,
    summary: route.summary ?? `Delete a ${kind}`,
    tag: collection.tag,
    params: idParams,
    status: 204,
    ...(collection.eventResource
      ? { event: { resource: collection.eventResource, action: 'deleted' as const } }
      : {}),
    handler: async ({ params, ctx }) => {
      route.authorize?.(ctx);
      const row = await requireVisibleRow(ctx, table, params.id, kind, ownerColumn);
      await route.beforeDelete?.(row, ctx);
      await deleteRow(ctx.db, table, params.id);
      return undefined;
    },
  });
}
