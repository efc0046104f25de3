import type { FastifyInstance } from 'fastify';
import { emptyBody, idParams } from '../../schemas/common.js';
import {
  type EventDeliveryStatus,
  eventDeliveryStatus,
  eventDestinationTestResult,
} from '../../schemas/event-delivery.js';
import { destinationHealth } from '../events/delivery-store.js';
import type { EventDispatcher } from '../events/dispatcher.js';
import { testEnvelope } from '../events/envelope.js';
import { defineRoute } from '../http/route.js';
import { EVENT_DESTINATIONS, eventDestinationToWire } from './event-destinations.js';
import { requireVisibleRow } from './visible-row.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Delivers the outbox; undefined when this server does not deliver (`--no-event-delivery`). */
    eventDispatcher: EventDispatcher | undefined;
  }
}

/** The dispatcher schedules in milliseconds; the API shows RFC 3339 seconds like every other time. */
const secondsOf = (iso: string) => `${iso.slice(0, 19)}Z`;
const toSeconds = (iso: string | null) => (iso === null ? null : secondsOf(iso));

/**
 * How delivery to an event destination goes (`delivery_status`), and a verification event sent
 * to it on request (`test_event`), so credentials can be checked before anything subscribes.
 */
export async function eventDestinationDeliveryRoutes(app: FastifyInstance): Promise<void> {
  const { path, table, kind, tag } = EVENT_DESTINATIONS;
  defineRoute(app, {
    method: 'GET',
    url: `${path}/:id/delivery_status`,
    operationId: 'getEventDestinationDeliveryStatus',
    summary:
      'How delivery to an event destination goes: backlog, undeliverable events, last success, last error, retry schedule',
    tag,
    params: idParams,
    status: 200,
    response: eventDeliveryStatus,
    handler: async ({ params, ctx }) => {
      await requireVisibleRow(ctx, table, params.id, kind, undefined);
      const health = await destinationHealth(ctx.db, params.id);
      const state: EventDeliveryStatus['state'] =
        health.consecutiveFailures > 0 ? 'failing' : health.lastSuccessAt ? 'delivering' : 'idle';
      return {
        uri: ctx.url(`${path}/${params.id}/delivery_status`),
        destination_id: params.id,
        state,
        backlog: health.backlog,
        oldest_pending_at: health.oldestPendingAt,
        undeliverable: health.undeliverable,
        delivered: health.delivered,
        last_success_at: toSeconds(health.lastSuccessAt),
        last_error: health.lastError && {
          message: health.lastError.message,
          at: secondsOf(health.lastError.at),
        },
        consecutive_failures: health.consecutiveFailures,
        next_attempt_at: health.consecutiveFailures > 0 ? toSeconds(health.nextAttemptAt) : null,
      };
    },
  });
  defineRoute(app, {
    method: 'POST',
    url: `${path}/:id/test_event`,
    operationId: 'sendEventDestinationTestEvent',
    summary: `Send one verification event (event_type event_destination_test.v0) to the destination's target now, and report whether it was accepted`,
    tag,
    params: idParams,
    body: emptyBody,
    status: 200,
    response: eventDestinationTestResult,
    // Before any transaction: the target may take seconds to answer, and a test writes no resource.
    prepare: async ({ params, ctx }) => {
      const row = await requireVisibleRow(ctx, table, params.id, kind, undefined);
      const event = testEnvelope(eventDestinationToWire(row, ctx));
      const dispatcher = app.eventDispatcher;
      if (!dispatcher) {
        const error = 'event delivery is turned off on this server (edgeward server --no-event-delivery)';
        return { delivered: false, error, duration_ms: 0, event };
      }
      return dispatcher.sendTest(row, event);
    },
    handler: async ({ prepared, ctx }) => {
      ctx.markUnchanged();
      return prepared;
    },
  });
}
