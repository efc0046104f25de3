import type { FastifyInstance } from 'fastify';
import {
  type EventSource,
  type EventSourceInput,
  type EventSubscription,
  eventSubscription,
  eventSubscriptionCreate,
  eventSubscriptionList,
  eventSubscriptionUpdate,
} from '../../schemas/event-subscriptions.js';
import { badReference } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import { defineRoute } from '../http/route.js';
import type { Db } from '../store/database.js';
import {
  defineCollectionReads,
  defineUpdateRoute,
  describedToWire,
  findRow,
  insertRow,
  newDescribedRow,
  type Row,
} from './collection.js';

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
    ...describedToWire(row, ctx, '/event_subscriptions'),
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
    event: { resource: 'event_subscription', action: 'created' },
    handler: async ({ body, ctx }) => {
      const destinationIds = body.destination_ids ?? [];
      await requireDestinations(ctx.db, destinationIds);
      const row = {
        ...newDescribedRow('esb', body, ctx),
        source_types: JSON.stringify(typesOf(body.sources) ?? []),
        destination_ids: JSON.stringify(destinationIds),
      };
      await insertRow(ctx.db, 'event_subscriptions', row);
      return eventSubscriptionToWire(row, ctx);
    },
  });
  defineUpdateRoute(app, {
    table: 'event_subscriptions',
    eventResource: 'event_subscription',
    path: '/event_subscriptions',
    kind: EVENT_SUBSCRIPTION_KIND,
    name: 'EventSubscription',
    tag: TAG,
    summary: 'Update an event subscription; sources and destination_ids, when given, replace the lists',
    body: eventSubscriptionUpdate,
    item: eventSubscription,
    toChanges: async (body, _row, ctx) => {
      if (body.destination_ids) await requireDestinations(ctx.db, body.destination_ids);
      return {
        description: body.description,
        metadata: body.metadata,
        source_types: asJson(typesOf(body.sources)),
        destination_ids: asJson(body.destination_ids),
      };
    },
    toWire: eventSubscriptionToWire,
  });
  defineCollectionReads(app, {
    table: 'event_subscriptions',
    eventResource: 'event_subscription',
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
