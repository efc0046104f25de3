import type { FastifyInstance } from 'fastify';
import { idParams, listQuery } from '../../schemas/common.js';
import {
  eventSource,
  eventSourceInput,
  eventSourceList,
  eventSourceParams,
} from '../../schemas/event-subscriptions.js';
import { ApiError, conflict } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import { listResponse } from '../http/list-response.js';
import { defineRoute, type RouteEvent } from '../http/route.js';
import { type Row, requireRow, updateRow } from '../store/rows.js';
import {
  EVENT_SUBSCRIPTIONS,
  eventSourceToWire,
  eventSubscriptionToWire,
  sourceTypesOf,
} from './event-subscriptions.js';

const TAG = EVENT_SUBSCRIPTIONS.tag;
const SOURCES_PATH = `${EVENT_SUBSCRIPTIONS.path}/:id/sources`;

/** The subscription of `/event_subscriptions/{id}/sources...`, or a 404. */
function requireSubscription(ctx: RequestContext, id: string): Promise<Row<'event_subscriptions'>> {
  return requireRow(ctx.db, EVENT_SUBSCRIPTIONS.table, id, EVENT_SUBSCRIPTIONS.kind);
}

/**
 * Event sources are not rows of their own: they are the `source_types` of their subscription,
 * addressed by type under `/event_subscriptions/{id}/sources/{type}`. A source has nothing to
 * update, so there is no PATCH.
 */
function requireSource(row: Row<'event_subscriptions'>, type: string): void {
  if (!sourceTypesOf(row).includes(type)) {
    throw new ApiError('ERR_EDGEWARD_400', `event subscription ${row.id} has no source of type '${type}'`);
  }
}

/**
 * The types of one page, in the order they were added: those after `beforeId` (the last type of
 * the previous page), at most `limit`. A `beforeId` that is not a source is a 400: with no row of
 * its own a removed type has no position to resume from.
 */
function sourcePage(
  row: Row<'event_subscriptions'>,
  limit: number,
  beforeId: string | undefined,
): { types: string[]; nextBeforeId: string | null } {
  const all = sourceTypesOf(row);
  let start = 0;
  if (beforeId !== undefined) {
    const index = all.indexOf(beforeId);
    if (index < 0) {
      // Like a referenced id that does not exist: the request is well formed, the source is not there.
      throw new ApiError(
        'ERR_EDGEWARD_103',
        `before_id: event subscription ${row.id} has no source of type '${beforeId}'`,
      );
    }
    start = index + 1;
  }
  const types = all.slice(start, start + limit);
  const hasMore = start + limit < all.length;
  return { types, nextBeforeId: hasMore ? (types.at(-1) ?? null) : null };
}

/**
 * Adding or removing a source changes its subscription, so the event is
 * `event_subscription_updated.v0` carrying the subscription as it now stands.
 */
const SUBSCRIPTION_UPDATED: RouteEvent = {
  resource: 'event_subscription',
  action: 'updated',
  object: async ({ params, ctx }: { params: unknown; ctx: RequestContext }) => {
    const { id } = params as { id: string };
    return eventSubscriptionToWire(await requireSubscription(ctx, id), ctx);
  },
};

export async function eventSourceRoutes(app: FastifyInstance): Promise<void> {
  defineRoute(app, {
    method: 'GET',
    url: SOURCES_PATH,
    operationId: 'listEventSources',
    summary:
      'List the sources (event types) of an event subscription, in the order they were added; before_id is a type',
    tag: TAG,
    params: idParams,
    query: listQuery,
    status: 200,
    response: eventSourceList,
    handler: async ({ params, query, ctx }) => {
      const row = await requireSubscription(ctx, params.id);
      const page = sourcePage(row, query.limit, query.before_id);
      // A type is the cursor, as an id is for collections of rows.
      const typePage = { rows: page.types.map((type) => ({ id: type })), nextBeforeId: page.nextBeforeId };
      return listResponse(
        ctx,
        'sources',
        `${EVENT_SUBSCRIPTIONS.path}/${row.id}/sources`,
        query,
        typePage,
        (item) => eventSourceToWire(row.id, item.id, ctx),
      );
    },
  });
  defineRoute(app, {
    method: 'POST',
    url: SOURCES_PATH,
    operationId: 'createEventSource',
    summary: 'Add a source (event type) to an event subscription',
    tag: TAG,
    params: idParams,
    body: eventSourceInput,
    status: 201,
    response: eventSource,
    idempotent: true,
    event: SUBSCRIPTION_UPDATED,
    handler: async ({ params, body, ctx }) => {
      const row = await requireSubscription(ctx, params.id);
      const types = sourceTypesOf(row);
      if (types.includes(body.type)) {
        throw conflict(`type: event subscription ${row.id} already has a source of type '${body.type}'`);
      }
      await updateRow(ctx.db, EVENT_SUBSCRIPTIONS.table, row.id, {
        source_types: JSON.stringify([...types, body.type]),
      });
      return eventSourceToWire(row.id, body.type, ctx);
    },
  });
  defineRoute(app, {
    method: 'GET',
    url: `${SOURCES_PATH}/:type`,
    operationId: 'getEventSource',
    summary: 'Get one source of an event subscription by its event type',
    tag: TAG,
    params: eventSourceParams,
    status: 200,
    response: eventSource,
    handler: async ({ params, ctx }) => {
      const row = await requireSubscription(ctx, params.id);
      requireSource(row, params.type);
      return eventSourceToWire(row.id, params.type, ctx);
    },
  });
  defineRoute(app, {
    method: 'DELETE',
    url: `${SOURCES_PATH}/:type`,
    operationId: 'deleteEventSource',
    summary: 'Remove a source from an event subscription',
    tag: TAG,
    params: eventSourceParams,
    status: 204,
    event: SUBSCRIPTION_UPDATED,
    handler: async ({ params, ctx }) => {
      const row = await requireSubscription(ctx, params.id);
      requireSource(row, params.type);
      await updateRow(ctx.db, EVENT_SUBSCRIPTIONS.table, row.id, {
        source_types: JSON.stringify(sourceTypesOf(row).filter((type) => type !== params.type)),
      });
      return undefined;
    },
  });
}
