import type { KubernetesObject } from '@kubernetes/client-node';
import type { EdgewardClient } from '../../../client/index.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import { registerManaged } from '../managed/register-managed.js';
import { EVENT_DESTINATION, EVENT_SUBSCRIPTION } from '../resource-types.js';
import { type EventSubscriptionObject, eventSubscriptionSync } from './sync.js';

/** EventSubscription -> `/event_subscriptions`, following the EventDestinations it names. */
export function registerEventSubscription(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<EventSubscriptionObject> {
  const sync = eventSubscriptionSync(api, manager.informer<KubernetesObject>(EVENT_DESTINATION));
  return registerManaged(manager, EVENT_SUBSCRIPTION, sync, {
    references: (subscription) =>
      (subscription.spec.destinationRefs ?? []).map(({ name }) => ({ kind: EVENT_DESTINATION.kind, name })),
    watches: [{ kind: EVENT_DESTINATION }],
  });
}
