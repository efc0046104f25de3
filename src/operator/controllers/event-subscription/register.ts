import type { KubernetesObject } from '@kubernetes/client-node';
import type { EdgewardClient } from '../../../client/index.js';
import type { Manager, RegisteredController } from '../../runtime/manager.js';
import { EVENT_DESTINATION, EVENT_SUBSCRIPTION } from '../kinds.js';
import { reconcileManaged } from '../managed-resource.js';
import { type EventSubscriptionObject, eventSubscriptionSync } from './sync.js';

/** EventSubscription -> `/event_subscriptions`, following the EventDestinations it names. */
export function registerEventSubscription(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<EventSubscriptionObject> {
  const client = manager.resources<EventSubscriptionObject>(EVENT_SUBSCRIPTION);
  const informer = manager.informer<EventSubscriptionObject>(EVENT_SUBSCRIPTION);
  const sync = eventSubscriptionSync(api, manager.informer<KubernetesObject>(EVENT_DESTINATION));
  const controller = { manager, kind: EVENT_SUBSCRIPTION, client, informer, sync };
  return manager.register<EventSubscriptionObject>({
    kind: EVENT_SUBSCRIPTION,
    references: (subscription) =>
      (subscription.spec.destinationRefs ?? []).map(({ name }) => ({ kind: EVENT_DESTINATION.kind, name })),
    watches: [{ kind: EVENT_DESTINATION }],
    reconcile: (request, context) => reconcileManaged(controller, request, context),
  });
}
