import type { FastifyInstance } from 'fastify';
import { idParams } from '../../schemas/common.js';
import {
  eventSource,
  eventSourceInput,
  eventSourceList,
  eventSourceParams,
} from '../../schemas/event-subscriptions.js';
import { ApiError, conflict } from '../errors/api-error.js';
import { defineRoute } from '../http/route.js';
import { type Row, requireRow, updateRow } from './collection.js';
import { EVENT_SUBSCRIPTION_KIND, eventSourceToWire, sourceTypesOf } from './event-subscriptions.js';

const TAG = 'Event subscriptions';

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

export async function eventSourceRoutes(app: FastifyInstance): Promise<void> {
  defineRoute(app, {
    method: 'GET',
    url: '/event_subscriptions/:id/sources',
    operationId: 'listEventSources',
    summary: 'List the sources (event types) of an event subscription, in the order they were added',
    tag: TAG,
    params: idParams,
    status: 200,
    response: eventSourceList,
    handler: async ({ params, ctx }) => {
      const row = await requireRow(ctx.db, 'event_subscriptions', params.id, EVENT_SUBSCRIPTION_KIND);
      // A subscription's sources are few and always returned whole: there is never a next page.
      return {
        sources: sourceTypesOf(row).map((type) => eventSourceToWire(row.id, type, ctx)),
        uri: ctx.url(`/event_subscriptions/${row.id}/sources`),
        next_page_uri: null,
      };
    },
  });
  defineRoute(app, {
    method: 'POST',
    url: '/event_subscriptions/:id/sources',
    operationId: 'createEventSource',
    summary: 'Add a source (event type) to an event subscription',
    tag: TAG,
    params: idParams,
    body: eventSourceInput,
    status: 201,
    response: eventSource,
    idempotent: true,
    // A source is part of its subscription: adding or removing one updates the subscription.
    event: { resource: 'event_subscription', action: 'updated' },
    handler: async ({ params, body, ctx }) => {
      const row = await requireRow(ctx.db, 'event_subscriptions', params.id, EVENT_SUBSCRIPTION_KIND);
      const types = sourceTypesOf(row);
      if (types.includes(body.type)) {
        throw conflict(`type: event subscription ${row.id} already has a source of type '${body.type}'`);
      }
      await updateRow(ctx.db, 'event_subscriptions', row.id, {
        source_types: JSON.stringify([...types, body.type]),
      });
      return eventSourceToWire(row.id, body.type, ctx);
    },
  });
  defineRoute(app, {
    method: 'GET',
    url: '/event_subscriptions/:id/sources/:type',
    operationId: 'getEventSource',
    summary: 'Get one source of an event subscription by its event type',
    tag: TAG,
    params: eventSourceParams,
    status: 200,
    response: eventSource,
    handler: async ({ params, ctx }) => {
      const row = await requireRow(ctx.db, 'event_subscriptions', params.id, EVENT_SUBSCRIPTION_KIND);
      requireSource(row, params.type);
      return eventSourceToWire(row.id, params.type, ctx);
    },
  });
  defineRoute(app, {
    method: 'DELETE',
    url: '/event_subscriptions/:id/sources/:type',
    operationId: 'deleteEventSource',
    summary: 'Remove a source from an event subscription',
    tag: TAG,
    params: eventSourceParams,
    status: 204,
    event: { resource: 'event_subscription', action: 'updated' },
    handler: async ({ params, ctx }) => {
      const row = await requireRow(ctx.db, 'event_subscriptions', params.id, EVENT_SUBSCRIPTION_KIND);
      requireSource(row, params.type);
      await updateRow(ctx.db, 'event_subscriptions', row.id, {
        source_types: JSON.stringify(sourceTypesOf(row).filter((type) => type !== params.type)),
      });
      return undefined;
    },
  });
}
