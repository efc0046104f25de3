import type { EdgewardClient } from '../../../client/index.js';
import type { EventDestination } from '../../../schemas/event-destinations.js';
import type {
  EventDestinationSpec,
  EventDestinationStatus,
} from '../../crds/definitions/event-destination.js';
import type { KubeResources } from '../../runtime/resource-client.js';
import { sameJson } from '../../runtime/same-json.js';
import type { ManagedObject, ResourceSync } from '../managed/managed-resource.js';
import { changedFields } from '../shared/changed-fields.js';
import { describedFields } from '../shared/described-fields.js';
import {
  readSecretValues,
  type SecretObject,
  type SecretValues,
  secretsChanged,
  secretValue,
} from '../shared/secret-values.js';
import { deliveryConditions } from './delivering.js';
import { targetInput, targetReadForm, targetSecretRequests } from './targets.js';

export type EventDestinationObject = ManagedObject & {
  spec: EventDestinationSpec;
  status?: EventDestinationStatus;
};

function desiredFields(object: EventDestinationObject) {
  return {
    ...describedFields(object.spec),
    format: object.spec.format ?? 'json',
  };
}

/**
 * EventDestination -> `/event_destinations`. Its secrets (AWS secret access key, Datadog API key)
 * come from Secrets; the server never shows them again, so the target is compared without them
 * and sent again whole when it differs or when a Secret it uses has a new resourceVersion. How
 * delivery goes is the Delivering condition (delivering.ts).
 */
export function eventDestinationSync(
  api: EdgewardClient,
  secrets: KubeResources<SecretObject>,
): ResourceSync<EventDestinationObject, SecretValues, EventDestination> {
  return {
    resolve: (object) =>
      readSecretValues(secrets, object.metadata?.namespace, targetSecretRequests(object.spec.target)),
    get: (id) => api.eventDestinations.get(id),
    create: (object, values, options) =>
      api.eventDestinations.create(
        {
          ...desiredFields(object),
          target: targetInput(object.spec.target, (field) => secretValue(values, field)),
        },
        options,
      ),
    async update(object, values, remote) {
      const patch: Record<string, unknown> = changedFields(desiredFields(object), remote);
      const targetDiffers = !sameJson(targetReadForm(object.spec.target), remote.target);
      if (targetDiffers || secretsChanged(object.status?.secretVersions, values)) {
        patch.target = targetInput(object.spec.target, (field) => secretValue(values, field));
      }
      if (Object.keys(patch).length === 0) return { remote, changed: false };
      return { remote: await api.eventDestinations.update(remote.id, patch), changed: true };
    },
    delete: (id) => api.eventDestinations.delete(id),
    statusFields: (_object, _remote, values) => ({ secretVersions: values.versions }),
    extraConditions: (_object, remote) => deliveryConditions(api, remote.id),
  };
}
