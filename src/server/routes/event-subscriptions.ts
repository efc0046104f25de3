import type { FastifyInstance } from 'fastify';
import { idParams } from '../../schemas/common.js';
import {
  type EventSource,
  type EventSourceInput,
  type EventSubscription,
  eventSubscription,
  eventSubscriptionCreate,
  eventSubscriptionList,
  eventSubscriptionUpdate,
} from '../../schemas/event-subscriptions.js';
import { newId } from '../crypto/ids.js';
import { badReference } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import { defineRoute } from '../http/route.js';
import type { Db } from '../store/database.js';
import { defineCollectionReads, findRow, insertRow, type Row, requireRow, updateRow } from './collection.js';

const TAG = 'Event subscriptions';
export const EVENT_SUBSCRIPTION_KIND = 'event subscription';

/** `source_types` and `destination_ids` are JSON arrays of strings, in the order the caller gave. */
export function sourceTypesOf(row: Row<'event_subscriptions'>): string[] {
  return JSON.parse(row.source_types) as string[];
}
function destinationIdsOf(row: Row<'event_subscriptions'>): string[] {
  return JSON.parse(row.destination_ids) as string[];
}

export function eventSourceToWire(subscriptionId: string, type: string, ctx: RequestContext): EventSource {
  return {
    type,
    uri: ctx.url(`/event_subscriptions/${subscriptionId}/sources/${encodeURIComponent(type)}`),
  };
}

export function eventSubscriptionToWire(
  row: Row<'event_subscriptions'>,
  ctx: RequestContext,
): EventSubscription {
  return {
    id: row.id,
    uri: ctx.url(`/event_subscriptions/${row.id}`),
    created_at: row.created_at,
    description: row.description,
    metadata: row.metadata,
    sources: sourceTypesOf(row).map((type) => eventSourceToWire(row.id, type, ctx)),
    destinations: destinationIdsOf(row).map((id) => ({ id, uri: ctx.url(`/event_destinations/${id}`) })),
  };
}

/** Every listed destination must exist now; the 400 names the first one that does not. */
async function requireDestinations(db: Db, ids: string[]): Promise<void> {
  for (const [index, id] of ids.entries()) {
    if (!(await findRow(db, 'event_destinations', id))) {
      throw badReference(`destination_ids[${index}]`, id, 'event destination');
    }
  }
}

const typesOf = (sources: EventSourceInput[] | undefined) => sources?.map((source) => source.type);
const asJson = (list: string[] | undefined) => (list === undefined ? undefined : JSON.stringify(list));

export async function eventSubscriptionRoutes(app: FastifyInstance): Promise<void> {
  defineRoute(app, {
    method: 'POST',
    url: '/event_subscriptions',
    operationId: 'createEventSubscription',
    summary: 'Create an event subscription: event types (sources) delivered to event destinations',
    tag: TAG,
    body: eventSubscriptionCreate,
    status: 201,
    response: eventSubscription,
    idempotent: true,
    handler: async ({ body, ctx }) => {
      const destinationIds = body.destination_ids ?? [];
      await requireDestinations(ctx.db, destinationIds);
      const row = {
        id: newId('esb'),
        created_at: ctx.now(),
        description: body.description ?? '',
        metadata: body.metadata ?? '',
        source_types: JSON.stringify(typesOf(body.sources) ?? []),
        destination_ids: JSON.stringify(destinationIds),
      };
      await insertRow(ctx.db, 'event_subscriptions', row);
      return eventSubscriptionToWire(row, ctx);
    },
  });
  defineRoute(app, {
    method: 'PATCH',
    url: '/event_subscriptions/:id',
    operationId: 'updateEventSubscription',
    summary: 'Update an event subscription; sources and destination_ids, when given, replace the lists',
    tag: TAG,
    params: idParams,
    body: eventSubscriptionUpdate,
    status: 200,
    response: eventSubscription,
    handler: async ({ params, body, ctx }) => {
      await requireRow(ctx.db, 'event_subscriptions', params.id, EVENT_SUBSCRIPTION_KIND);
      if (body.destination_ids) await requireDestinations(ctx.db, body.destination_ids);
      await updateRow(ctx.db, 'event_subscriptions', params.id, {
        description: body.description,
        metadata: body.metadata,
        source_types: asJson(typesOf(body.sources)),
        destination_ids: asJson(body.destination_ids),
      });
      return eventSubscriptionToWire(
        await requireRow(ctx.db, 'event_subscriptions', params.id, EVENT_SUBSCRIPTION_KIND),
        ctx,
      );
    },
  });
  defineCollectionReads(app, {
    table: 'event_subscriptions',
    path: '/event_subscriptions',
    listKey: 'event_subscriptions',
    kind: EVENT_SUBSCRIPTION_KIND,
    name: 'EventSubscription',
    plural: 'EventSubscriptions',
    tag: TAG,
    item: eventSubscription,
    list: eventSubscriptionList,
    toWire: eventSubscriptionToWire,
  });
}
