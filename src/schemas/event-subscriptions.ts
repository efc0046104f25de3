import { z } from 'zod';
import { describedInputFieldsChars, describedResourceFields, listOf, ref, resourceId } from './common.js';

/**
 * Event subscriptions: which event types (sources) go to which event destinations.
 * Unlike other resources, description and metadata limits count characters, not bytes.
 */

/** `<resource>_<action>.v<N>`, e.g. `ip_policy_created.v0`. */
const EVENT_TYPE = /^[a-z][a-z0-9]*(_[a-z0-9]+)+\.v\d+$/;
export const eventType = z
  .string()
  .max(255, 'must be at most 255 characters')
  .regex(EVENT_TYPE, 'must have the form <resource>_<action>.v<N>, e.g. ip_policy_created.v0');

/** Flags the second and later occurrences of a value, naming both positions. */
function noDuplicates<T>(label: (item: T) => string, pathOf: (index: number) => PropertyKey[]) {
  return (items: T[], ctx: z.core.$RefinementCtx<T[]>) => {
    const firstIndex = new Map<string, number>();
    items.forEach((item, index) => {
      const key = label(item);
      const first = firstIndex.get(key);
      if (first === undefined) firstIndex.set(key, index);
      else
        ctx.addIssue({
          code: 'custom',
          path: pathOf(index),
          message: `'${key}' is listed twice (first at index ${first})`,
        });
    });
  };
}

export const eventSourceInput = z.strictObject({ type: eventType });
export type EventSourceInput = z.output<typeof eventSourceInput>;

const sourcesInput = z.array(eventSourceInput).superRefine(
  noDuplicates(
    (source) => source.type,
    (index) => [index, 'type'],
  ),
);
const destinationIdsInput = z.array(resourceId('ed')).superRefine(
  noDuplicates(
    (id) => id,
    (index) => [index],
  ),
);

export const eventSource = z
  .object({
    type: z.string(),
    uri: z.string().meta({ description: '{base_url}/event_subscriptions/<subscription id>/sources/<type>' }),
  })
  .meta({ id: 'EventSource' });
export type EventSource = z.infer<typeof eventSource>;

export const eventSubscription = z
  .object({
    ...describedResourceFields,
    sources: z.array(eventSource),
    destinations: z.array(ref),
  })
  .meta({ id: 'EventSubscription' });
export type EventSubscription = z.infer<typeof eventSubscription>;

export const eventSubscriptionCreate = z.strictObject({
  ...describedInputFieldsChars,
  sources: sourcesInput.optional().meta({ description: 'event types to deliver; default none' }),
  destination_ids: destinationIdsInput
    .optional()
    .meta({ description: 'event destination ids; default none' }),
});
export type EventSubscriptionCreate = z.input<typeof eventSubscriptionCreate>;

/** `sources` and `destination_ids`, when given, replace the whole list. */
export const eventSubscriptionUpdate = eventSubscriptionCreate;
export type EventSubscriptionUpdate = z.input<typeof eventSubscriptionUpdate>;

export const eventSubscriptionList = listOf('event_subscriptions', eventSubscription);
export type EventSubscriptionList = z.infer<typeof eventSubscriptionList>;

export const eventSourceList = listOf('sources', eventSource);
export type EventSourceList = z.infer<typeof eventSourceList>;

export const eventSourceParams = z.strictObject({
  id: z.string().min(1),
  // Validated as any string (an unknown type is a 404); documented as the event types it can name.
  type: z.string().min(1).meta({ pattern: EVENT_TYPE.source, maxLength: 255 }),
});
