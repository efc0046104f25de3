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
import type { Db } from '../store/database.js';
import { findRow, insertRow, type Row } from '../store/rows.js';
import { defineCollection } from './collection.js';
import { defineCreateRoute } from './collection-create.js';
import { defineCollectionReads } from './collection-reads.js';
import { defineUpdateRoute } from './collection-update.js';
import { describedToWire, newDescribedRow } from './described-row.js';
import { EVENT_DESTINATIONS } from './event-destinations.js';

export const EVENT_SUBSCRIPTIONS = defineCollection({
  table: 'event_subscriptions',
  path: '/event_subscriptions',
  kind: 'event subscription',
  name: 'EventSubscription',
  plural: 'EventSubscriptions',
  tag: 'Event subscriptions',
  eventResource: 'event_subscription',
  listKey: 'event_subscriptions',
  item: eventSubscription,
  list: eventSubscriptionList,
  toWire: eventSubscriptionToWire,
});

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
    uri: ctx.url(`${EVENT_SUBSCRIPTIONS.path}/${subscriptionId}/sources/${encodeURIComponent(type)}`),
  };
}

export function eventSubscriptionToWire(
  row: Row<'event_subscriptions'>,
  ctx: RequestContext,
): EventSubscription {
  return {
    ...describedToWire(row, ctx, EVENT_SUBSCRIPTIONS.path),
    sources: sourceTypesOf(row).map((type) => eventSourceToWire(row.id, type, ctx)),
    destinations: destinationIdsOf(row).map((id) => ({
      id,
      uri: ctx.url(`${EVENT_DESTINATIONS.path}/${id}`),
    })),
  };
}

/** Every listed destination must exist now; the 400 names the first one that does not. */
async function requireDestinations(db: Db, ids: string[]): Promise<void> {
  for (const [index, id] of ids.entries()) {
    if (!(await findRow(db, EVENT_DESTINATIONS.table, id))) {
      throw badReference(`destination_ids[${index}]`, id, EVENT_DESTINATIONS.kind);
    }
  }
}

const typesOf = (sources: EventSourceInput[] | undefined) => sources?.map((source) => source.type);
const asJson = (list: string[] | undefined) => (list === undefined ? undefined : JSON.stringify(list));

export async function eventSubscriptionRoutes(app: FastifyInstance): Promise<void> {
  defineCreateRoute(app, EVENT_SUBSCRIPTIONS, {
    summary: 'Create an event subscription: event types (sources) delivered to event destinations',
    body: eventSubscriptionCreate,
    handler: async ({ body, ctx }) => {
      const destinationIds = body.destination_ids ?? [];
      await requireDestinations(ctx.db, destinationIds);
      const row = {
        ...newDescribedRow(EVENT_SUBSCRIPTIONS.idPrefix, body, ctx),
        source_types: JSON.stringify(typesOf(body.sources) ?? []),
        destination_ids: JSON.stringify(destinationIds),
      };
      await insertRow(ctx.db, EVENT_SUBSCRIPTIONS.table, row);
      return eventSubscriptionToWire(row, ctx);
    },
  });
  defineUpdateRoute(app, EVENT_SUBSCRIPTIONS, {
    summary: 'Update an event subscription; sources and destination_ids, when given, replace the lists',
    body: eventSubscriptionUpdate,
    toChanges: async (body, _row, ctx) => {
      if (body.destination_ids) await requireDestinations(ctx.db, body.destination_ids);
      return {
        description: body.description,
        metadata: body.metadata,
        source_types: asJson(typesOf(body.sources)),
        destination_ids: asJson(body.destination_ids),
      };
    },
  });
  defineCollectionReads(app, EVENT_SUBSCRIPTIONS);
}
