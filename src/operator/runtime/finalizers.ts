import type { KubernetesObject } from '@kubernetes/client-node';
import { isConflict, isKubeNotFound, statusCodeOf } from './kube-errors.js';
import type { JsonPatchOperation, KubeResources } from './resource-client.js';

export const FINALIZER = 'edgeward.dev/finalizer';

export function hasFinalizer(object: KubernetesObject, finalizer: string = FINALIZER): boolean {
  return object.metadata?.finalizers?.includes(finalizer) ?? false;
}

export function isBeingDeleted(object: KubernetesObject): boolean {
  return Boolean(object.metadata?.deletionTimestamp);
}

const MAX_ATTEMPTS = 5;

/**
 * Adds the finalizer with a JSON patch that first tests the resourceVersion it was computed
 * from, so it never overwrites a concurrent change to `metadata.finalizers`; on a failed test
 * (409, or 422 as Kubernetes reports a failed `test` op) it re-reads and tries again. A no-op
 * (already there) makes no request. Returns the object as stored.
 */
export async function addFinalizer<T extends KubernetesObject>(
  client: KubeResources<T>,
  object: T,
  finalizer: string = FINALIZER,
): Promise<T> {
  const result = await patchFinalizers(client, object, (current) => {
    const finalizers = current.metadata?.finalizers;
    if (finalizers?.includes(finalizer)) return undefined;
    return finalizers
      ? [{ op: 'add', path: '/metadata/finalizers/-', value: finalizer }]
      : [{ op: 'add', path: '/metadata/finalizers', value: [finalizer] }];
  });
  if (!result) throw new Error(`${describe(client, object)} disappeared while adding its finalizer`);
  return result;
}

/**
 * Removes the finalizer (conditionally, as `addFinalizer`). Returns the object as stored, or
 * undefined when it is gone (removing the last finalizer of a deleted object lets it go).
 */
export async function removeFinalizer<T extends KubernetesObject>(
  client: KubeResources<T>,
  object: T,
  finalizer: string = FINALIZER,
): Promise<T | undefined> {
  const result = await patchFinalizers(client, object, (current) => {
    const index = current.metadata?.finalizers?.indexOf(finalizer) ?? -1;
    if (index < 0) return undefined;
    return [{ op: 'remove', path: `/metadata/finalizers/${index}` }];
  });
  // The API answers the last removal with the object's final state; it is deleted right after.
  const gone = result && isBeingDeleted(result) && (result.metadata?.finalizers ?? []).length === 0;
  return gone ? undefined : result;
}

async function patchFinalizers<T extends KubernetesObject>(
  client: KubeResources<T>,
  object: T,
  operations: (current: T) => JsonPatchOperation[] | undefined,
): Promise<T | undefined> {
  let current = object;
  for (let attempt = 1; ; attempt++) {
    const ops = operations(current);
    if (!ops) return current;
    const namespace = current.metadata?.namespace;
    const name = current.metadata?.name ?? '';
    const precondition: JsonPatchOperation = {
      op: 'test',
      path: '/metadata/resourceVersion',
      value: current.metadata?.resourceVersion,
    };
    try {
      return await client.patch(namespace, name, [precondition, ...ops]);
    } catch (error) {
      if (isKubeNotFound(error)) return undefined;
      const maybeStale = isConflict(error) || statusCodeOf(error) === 422;
      if (!maybeStale || attempt >= MAX_ATTEMPTS) {
        throw new Error(`patching the finalizers of ${describe(client, current)} failed`, { cause: error });
      }
      let fresh: T;
      try {
        fresh = await client.get(namespace, name);
      } catch (readError) {
        if (isKubeNotFound(readError)) return undefined;
        throw readError;
      }
      // 422 with an unchanged object is a real rejection (e.g. no new finalizers on an object
      // being deleted), not a lost race.
      if (fresh.metadata?.resourceVersion === current.metadata?.resourceVersion) {
        throw new Error(`patching the finalizers of ${describe(client, current)} was rejected`, {
          cause: error,
        });
      }
      current = fresh;
    }
  }
}

function describe<T extends KubernetesObject>(client: KubeResources<T>, object: T): string {
  return `${client.kind.kind} ${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
}
