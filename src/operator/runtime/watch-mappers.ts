import type { KubernetesObject } from '@kubernetes/client-node';
import { EXTERNAL_ID_ANNOTATION } from './external-id.js';
import { FINALIZER } from './finalizers.js';
import { apiVersionOf, objectKey, type ResourceKind } from './resource-types.js';

/**
 * Maps an object to the keys of its owners of `ownerKind` (same namespace, from
 * `metadata.ownerReferences`): a Secret the operator wrote for a TunnelCredential enqueues that
 * TunnelCredential when someone edits or deletes it.
 */
export function ownersOf(ownerKind: ResourceKind): (object: KubernetesObject) => string[] {
  const group = ownerKind.group;
  return (object) =>
    (object.metadata?.ownerReferences ?? [])
      .filter((owner) => owner.kind === ownerKind.kind && groupOf(owner.apiVersion) === group)
      .map((owner) => objectKey(object.metadata?.namespace, owner.name));
}

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/** An ownerReference that makes `owner` the controller of the object it is put on. */
export function controllerReference(owner: KubernetesObject, ownerKind: ResourceKind) {
  const name = owner.metadata?.name;
  const uid = owner.metadata?.uid;
  if (!name || !uid) throw new Error('an owner needs metadata.name and metadata.uid');
  return {
    apiVersion: apiVersionOf(ownerKind),
    kind: ownerKind.kind,
    name,
    uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/**
 * The default filter for updates of a controller's own kind: reconcile when the spec changed
 * (generation), or labels, annotations, finalizers or the deletion timestamp did; not for
 * status-only updates (our own status writes would otherwise loop), nor for the external-id
 * annotation alone (likewise the operator's own write). Kinds without a generation
 * (ConfigMap, Secret) always pass.
 */
export function specOrMetadataChanged(previous: KubernetesObject, object: KubernetesObject): boolean {
  const before = previous.metadata ?? {};
  const after = object.metadata ?? {};
  if (after.generation === undefined) return true;
  return (
    before.generation !== after.generation ||
    String(before.deletionTimestamp) !== String(after.deletionTimestamp) ||
    JSON.stringify(before.labels ?? {}) !== JSON.stringify(after.labels ?? {}) ||
    JSON.stringify(userAnnotations(before.annotations)) !==
      JSON.stringify(userAnnotations(after.annotations)) ||
    finalizersChanged(before.finalizers ?? [], after.finalizers ?? [])
  );
}

/** Annotations without the one the operator mirrors status.id into (its own write coming back). */
function userAnnotations(annotations: Record<string, string> | undefined): Record<string, string> {
  if (!annotations || !(EXTERNAL_ID_ANNOTATION in annotations)) return annotations ?? {};
  const { [EXTERNAL_ID_ANNOTATION]: _mirrored, ...rest } = annotations;
  return rest;
}

/**
 * Finalizer changes enqueue (someone removing ours gets it back), except our own finalizer being
 * added: that is the reconcile in progress patching it, and re-running it would be wasted work.
 */
function finalizersChanged(before: readonly string[], after: readonly string[]): boolean {
  if (JSON.stringify(before) === JSON.stringify(after)) return false;
  const onlyOursAdded =
    after.length === before.length + 1 &&
    after.at(-1) === FINALIZER &&
    JSON.stringify(after.slice(0, -1)) === JSON.stringify(before);
  return !onlyOursAdded;
}

type WithStatus = KubernetesObject & {
  status?: { id?: unknown; conditions?: { type: string; status: string }[] };
};

const readyStatusOf = (object: WithStatus) =>
  object.status?.conditions?.find((condition) => condition.type === 'Ready')?.status;

/**
 * The default filter for updates of a watched (referenced) kind. Dependents use only a referenced
 * object's server id and whether it is Ready, so only a change of those (or of its deletion
 * timestamp) enqueues them; its own status rewrites and spec changes (which keep its id) do not.
 * Kinds without a generation (Secret, ConfigMap) always pass: their content is what is used.
 */
export function referenceStateChanged(previous: KubernetesObject, object: KubernetesObject): boolean {
  if (object.metadata?.generation === undefined) return true;
  const before = previous as WithStatus;
  const after = object as WithStatus;
  return (
    before.status?.id !== after.status?.id ||
    readyStatusOf(before) !== readyStatusOf(after) ||
    String(before.metadata?.deletionTimestamp) !== String(after.metadata?.deletionTimestamp)
  );
}
