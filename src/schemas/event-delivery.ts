import { z } from 'zod';
import { timestamp } from './common.js';

/**
 * What event destinations receive, and what the API tells about their delivery.
 *
 * Every record sent to a target is one envelope, serialized as JSON. The envelope's shape is
 * versioned by the event type's suffix (`.v0`): a change of shape is a new version.
 */

/** The event type of the verification event `POST /event_destinations/{id}/test_event` sends. */
export const TEST_EVENT_TYPE = 'event_destination_test.v0';

export const eventEnvelope = z
  .object({
    id: z.string().meta({
      description:
        'id of this delivery (`evd_…`): one per event and destination, the same on every retry, so a consumer can drop a repeated record',
    }),
    event_id: z
      .string()
      .meta({ description: 'id of the account event (`ev_…`), the same for every destination' }),
    event_type: z.string().meta({ description: '`<resource>_<action>.v<N>`, e.g. `ip_policy_created.v0`' }),
    created_at: timestamp.meta({ description: 'when the change was committed (RFC 3339, UTC)' }),
    object: z.record(z.string(), z.unknown()).meta({
      description:
        'the resource as the API returned it after the change (secrets and one-time tokens null); `{id}` for deletes',
    }),
  })
  .meta({ id: 'EventEnvelope' });
export type EventEnvelope = z.infer<typeof eventEnvelope>;

export const deliveryStates = ['idle', 'delivering', 'failing'] as const;

export const eventDeliveryStatus = z
  .object({
    uri: z.string(),
    destination_id: z.string(),
    state: z.enum(deliveryStates).meta({
      description:
        '`idle`: nothing sent yet; `delivering`: the last attempt succeeded; `failing`: the last attempt failed and delivery is retried at `next_attempt_at`',
    }),
    backlog: z.number().int().meta({
      description:
        'events waiting to be delivered to this destination, those committed but not yet routed to it included',
    }),
    oldest_pending_at: timestamp.nullable().meta({ description: 'when the oldest waiting event happened' }),
    undeliverable: z.number().int().meta({
      description:
        'events the target can never accept (larger than its record limit): kept and counted, never retried, never pruned',
    }),
    delivered: z
      .number()
      .int()
      .meta({ description: 'events delivered to this destination since it was created' }),
    last_success_at: timestamp.nullable(),
    last_error: z
      .object({ message: z.string(), at: timestamp })
      .nullable()
      .meta({ description: 'the most recent failure, kept after later successes (compare its time)' }),
    consecutive_failures: z.number().int(),
    next_attempt_at: timestamp.nullable().meta({ description: 'when a failing destination is tried again' }),
  })
  .meta({ id: 'EventDeliveryStatus' });
export type EventDeliveryStatus = z.infer<typeof eventDeliveryStatus>;

export const eventDestinationTestResult = z
  .object({
    delivered: z.boolean().meta({ description: 'whether the target accepted the test event' }),
    error: z.string().nullable().meta({ description: 'why it did not, as the target said' }),
    duration_ms: z.number().int(),
    event: eventEnvelope,
  })
  .meta({ id: 'EventDestinationTestResult' });
export type EventDestinationTestResult = z.infer<typeof eventDestinationTestResult>;
