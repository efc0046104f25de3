import type { EdgewardClient } from '../../../client/index.js';
import type { EventDeliveryStatus } from '../../../schemas/event-delivery.js';
import type { ConditionUpdate } from '../../runtime/conditions.js';
import type { ExtraConditions } from '../managed/managed-resource.js';

/**
 * The `Delivering` condition of an EventDestination: how delivery of its events goes, as the
 * server's `delivery_status` says. Ready stays about the spec being applied; a destination whose
 * target refuses events is Ready and Delivering=False.
 */
export const DELIVERING = 'Delivering';

/** A failing destination is looked at again this soon, so Delivering recovers without a resync. */
export const FAILING_RECHECK_MS = 60_000;

/** Enough to say why (the target's status code and the start of its answer); Events say more. */
const MAX_ERROR_MESSAGE = 256;

/**
 * The condition for a delivery status. Only the state and the last error's text go in, never
 * counts or times: an unchanged state then computes the same condition and writes no status.
 */
export function deliveringCondition(
  status: Pick<EventDeliveryStatus, 'state' | 'last_error'>,
): ConditionUpdate {
  switch (status.state) {
    case 'delivering':
      return {
        type: DELIVERING,
        status: 'True',
        reason: 'Delivering',
        message: 'the last delivery succeeded',
      };
    case 'failing':
      return {
        type: DELIVERING,
        status: 'False',
        reason: 'DeliveryFailing',
        message: failureMessage(status.last_error?.message),
      };
    case 'idle':
      return {
        type: DELIVERING,
        status: 'Unknown',
        reason: 'NoEventsYet',
        message: 'no event has been sent to the target yet',
      };
  }
}

/** One line, bounded: a target's answer may be a multi-line HTML page. */
function failureMessage(error: string | undefined): string {
  const line = (error ?? '').replace(/\s+/g, ' ').trim();
  if (line === '') return 'the last delivery failed';
  return line.length > MAX_ERROR_MESSAGE ? `${line.slice(0, MAX_ERROR_MESSAGE - 1)}…` : line;
}

/** The destination's extra conditions, read from the server; a failing one is looked at again soon. */
export async function deliveryConditions(api: EdgewardClient, id: string): Promise<ExtraConditions> {
  const status = await api.eventDestinations.deliveryStatus(id);
  const condition = deliveringCondition(status);
  return status.state === 'failing'
    ? { conditions: [condition], requeueAfterMs: FAILING_RECHECK_MS }
    : { conditions: [condition] };
}
