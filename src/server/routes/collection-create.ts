import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import type { RequestContext } from '../http/context.js';
import { defineRoute } from '../http/route.js';
import type { TableWithId } from '../store/rows.js';
import type { Collection } from './collection.js';

/** What a collection's create says besides the collection's facts. */
export interface CreateRoute<Item extends z.ZodType, Body extends z.ZodType, X> {
  summary: string;
  body: Body;
  /**
   * Slow work that needs no database (key generation) done before the write transaction, as in
   * `RouteDefinition.prepare`.
   */
  prepare?: (input: { body: z.output<Body> }) => Promise<X>;
  /** Stores the new item and answers with its read form. */
  handler(input: { body: z.output<Body>; ctx: RequestContext; prepared: X }): Promise<z.input<Item>>;
}

/** POST `<path>`: 201 with the new item, `Idempotency-Key` honoured, `<resource>_created.v0` recorded. */
export function defineCreateRoute<
  T extends TableWithId,
  Item extends z.ZodType,
  List extends z.ZodType,
  Body extends z.ZodType,
  X = undefined,
>(app: FastifyInstance, collection: Collection<T, Item, List>, route: CreateRoute<Item, Body, X>): void {
  defineRoute(app, {
    method: 'POST',
    url: collection.path,
    operationId: `create${collection.name}`,
    summary: route.summary,
    tag: collection.tag,
    body: route.body,
    status: 201,
    response: collection.item,
    idempotent: true,
    ...(collection.eventResource
      ? { event: { resource: collection.eventResource, action: 'created' as const } }
      : {}),
    prepare: route.prepare,
    handler: route.handler,
  });
}
