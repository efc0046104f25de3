import type { FastifyInstance } from 'fastify';
import {
  type EventDestination,
  eventDestination,
  eventDestinationCreate,
  eventDestinationList,
  eventDestinationUpdate,
} from '../../schemas/event-destinations.js';
import { redactedEventTarget } from '../../schemas/event-target-forms.js';
import { inUse } from '../errors/api-error.js';
import { subscriptionsListing } from '../events/delivery-store.js';
import { openTarget, sealTarget } from '../events/stored-target.js';
import type { RequestContext } from '../http/context.js';
import { insertRow, type Row } from '../store/rows.js';
import { defineCollection } from './collection.js';
import { defineCreateRoute } from './collection-create.js';
import { defineCollectionReads } from './collection-reads.js';
import { defineUpdateRoute } from './collection-update.js';
import { describedToWire, newDescribedRow } from './described-row.js';

export const EVENT_DESTINATIONS = defineCollection({
  table: 'event_destinations',
  path: '/event_destinations',
  kind: 'event destination',
  name: 'EventDestination',
  plural: 'EventDestinations',
  tag: 'Event destinations',
  eventResource: 'event_destination',
  listKey: 'event_destinations',
  item: eventDestination,
  list: eventDestinationList,
  toWire: eventDestinationToWire,
});

export function eventDestinationToWire(
  row: Row<'event_destinations'>,
  ctx: RequestContext,
): EventDestination {
  return {
    ...describedToWire(row, ctx, EVENT_DESTINATIONS.path),
    format: row.format,
    target: redactedEventTarget(openTarget(ctx.secretBox, row.id, row.target_sealed)),
  };
}

export async function eventDestinationRoutes(app: FastifyInstance): Promise<void> {
  defineCreateRoute(app, EVENT_DESTINATIONS, {
    summary: 'Create an event destination (it receives nothing until a subscription lists it)',
    body: eventDestinationCreate,
    handler: async ({ body, ctx }) => {
      const described = newDescribedRow(EVENT_DESTINATIONS.idPrefix, body, ctx);
      const row = {
        ...described,
        format: body.format ?? 'json',
        target_sealed: sealTarget(ctx.secretBox, described.id, body.target),
      };
      await insertRow(ctx.db, EVENT_DESTINATIONS.table, row);
      return eventDestinationToWire(row, ctx);
    },
  });
  defineUpdateRoute(app, EVENT_DESTINATIONS, {
    summary: 'Update an event destination; a given target replaces the old one completely',
    body: eventDestinationUpdate,
    toChanges: (body, row, ctx) => ({
      description: body.description,
      metadata: body.metadata,
      format: body.format,
      target_sealed: body.target === undefined ? undefined : sealTarget(ctx.secretBox, row.id, body.target),
    }),
  });
  defineCollectionReads(app, EVENT_DESTINATIONS, {
    // A subscription must never point at a destination that is gone: the caller unlinks it first.
    beforeDelete: async (row, ctx) => {
      const subscriptionId = (await subscriptionsListing(ctx.db, row.id))[0]?.id;
      if (subscriptionId) {
        throw inUse(
          `event destination ${row.id} is used by event subscription ${subscriptionId}; remove it there first`,
        );
      }
    },
  });
}
