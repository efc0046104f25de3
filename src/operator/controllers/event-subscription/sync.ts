import type { EdgewardClient } from '../../../client/index.js';
import type { EventSubscription } from '../../../schemas/event-subscriptions.js';
import type {
  EventSubscriptionSpec,
  EventSubscriptionStatus,
} from '../../crds/definitions/event-subscription.js';
import type { InformerReader } from '../../runtime/informer.js';
import { sameJson } from '../../runtime/same-json.js';
import type { ManagedObject, Resolution, ResourceSync } from '../managed/managed-resource.js';
import { changedFields } from '../shared/changed-fields.js';
import { describedFields } from '../shared/described-fields.js';
import { type ReferencedObject, resolveReadyIds } from '../shared/ready-references.js';

export type EventSubscriptionObject = ManagedObject & {
  spec: EventSubscriptionSpec;
  status?: EventSubscriptionStatus;
};

/** The destination ids the subscription should send to. */
export interface ResolvedSubscription {
  destinationIds: string[];
}

/** Sources and destinations compare as sets: the server keeps its own order. */
const sortedTypes = (sources: readonly { type: string }[]) => sources.map((source) => source.type).sort();

/**
 * EventSubscription -> `/event_subscriptions`: its sources (event types) and the destinations it
 * sends to, by `destinationRefs` (EventDestinations, waited for until Ready) or raw ids. Both lists
 * are replaced whole when they differ (the API's update semantics).
 */
export function eventSubscriptionSync(
  api: EdgewardClient,
  destinations: InformerReader<ReferencedObject>,
): ResourceSync<EventSubscriptionObject, ResolvedSubscription, EventSubscription> {
  function desired(object: EventSubscriptionObject, resolved: ResolvedSubscription) {
    return {
      ...describedFields(object.spec),
      sources: (object.spec.sources ?? []).map(({ type }) => ({ type })),
      destination_ids: resolved.destinationIds,
    };
  }

  return {
    async resolve(object): Promise<Resolution<ResolvedSubscription>> {
      const refs = resolveReadyIds(
        destinations,
        object.metadata?.namespace,
        object.spec.destinationRefs,
        'spec.destinationRefs',
        'EventDestination',
      );
      if (!refs.ready) return refs;
      return { ready: true, value: { destinationIds: refs.value ?? object.spec.destinationIds ?? [] } };
    },
    get: (id) => api.eventSubscriptions.get(id),
    create: (object, resolved, options) => api.eventSubscriptions.create(desired(object, resolved), options),
    async update(object, resolved, remote) {
      const want = desired(object, resolved);
      const patch: Record<string, unknown> = changedFields(
        { description: want.description, metadata: want.metadata },
        remote,
      );
      if (!sameJson(sortedTypes(want.sources), sortedTypes(remote.sources))) patch.sources = want.sources;
      const remoteIds = remote.destinations.map((destination) => destination.id).sort();
      if (!sameJson([...want.destination_ids].sort(), remoteIds))
        patch.destination_ids = want.destination_ids;
      if (Object.keys(patch).length === 0) return { remote, changed: false };
      return { remote: await api.eventSubscriptions.update(remote.id, patch), changed: true };
    },
    delete: (id) => api.eventSubscriptions.delete(id),
  };
}
