import { z } from 'zod';
import { atMostOne, withRules } from '../cel.js';
import { describedSpecFields, localRefs, serverIds, statusFields } from '../common.js';
import { defineKind } from '../crd-definition.js';

export const eventSubscriptionSpec = withRules(
  z.object({
    ...describedSpecFields,
    sources: z
      .array(
        z.object({
          type: z
            .string()
            .max(255)
            .regex(/^[a-z][a-z0-9]*(_[a-z0-9]+)+\.v[0-9]+$/)
            .meta({ description: 'event type, <resource>_<action>.v<N>, e.g. ip_policy_created.v0' }),
        }),
      )
      .max(100)
      .optional()
      .meta({
        description: 'event types delivered to the destinations',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['type'],
      }),
    destinationRefs: localRefs('EventDestination').optional(),
    destinationIds: serverIds('ed', 'event destination').optional(),
  }),
  atMostOne('destinationRefs', 'destinationIds'),
);
export type EventSubscriptionSpec = z.output<typeof eventSubscriptionSpec>;

export const eventSubscriptionStatus = z.object(statusFields);
export type EventSubscriptionStatus = z.output<typeof eventSubscriptionStatus>;

export const eventSubscriptionKind = defineKind({
  kind: 'EventSubscription',
  plural: 'eventsubscriptions',
  shortNames: ['esb'],
  description: 'EventSubscription sends account events of the listed types to event destinations.',
  spec: eventSubscriptionSpec,
  status: eventSubscriptionStatus,
});
