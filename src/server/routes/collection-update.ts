import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { idParams } from '../../schemas/common.js';
import type { RequestContext } from '../http/context.js';
import { defineRoute } from '../http/route.js';
import { type Row, requireRow, type TableWithId, updateRow } from '../store/rows.js';
import type { Collection } from './collection.js';
import { requireVisibleRow } from './visible-row.js';

/** What a collection's update says besides the collection's facts. */
export interface UpdateRoute<T extends TableWithId, Body extends z.ZodType> {
  summary: string;
  body: Body;
  /** Runs before the row is looked up, so a caller without permission learns nothing of which ids exist. */
  authorize?(ctx: RequestContext): void;
  /** The columns to set (undefined ones are left alone); may refuse the update by throwing an ApiError. */
  toChanges(
    body: z.output<Body>,
    row: Row<T>,
    ctx: RequestContext,
  ): Partial<Row<T>> | Promise<Partial<Row<T>>>;
}

/**
 * PATCH `<path>/:id`: 404 if unknown (or, with an owner column, someone else's), apply the changes,
 * answer with the item as it now stands, record `<resource>_updated.v0`.
 */
export function defineUpdateRoute<
  T extends TableWithId,
  Item extends z.ZodType,
  List extends z.ZodType,
  Body extends z.ZodType,
>(app: FastifyInstance, collection: Collection<T, Item, List>, route: UpdateRoute<T, Body>): void {
  const { table, kind, ownerColumn } = collection;
  defineRoute(app, {
    method: 'PATCH',
    url: `${collection.path}/:id`,
    operationId: `update${collection.name}`,
    summary: route.summary,
    tag: collection.tag,
    params: idParams,
    body: route.body,
    status: 200,
    response: collection.item,
    ...(collection.eventResource
      ? { event: { resource: collection.eventResource, action: 'updated' as const } }
      : {}),
    handler: async ({ params, body, ctx }) => {
      route.authorize?.(ctx);
      const row = await requireVisibleRow(ctx, table, params.id, kind, ownerColumn);
      await updateRow(ctx.db, table, params.id, await route.toChanges(body, row, ctx));
      return collection.toWire(await requireRow(ctx.db, table, params.id, kind), ctx);
    },
  });
}
