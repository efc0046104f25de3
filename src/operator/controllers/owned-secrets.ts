import type { KubernetesObject } from '@kubernetes/client-node';
import { isNotFound } from '../runtime/api-errors.js';
import type { ResourceClient } from '../runtime/resource-client.js';
import type { SecretObject } from './secret-values.js';

/** Put on every Secret the operator writes, so its Secret informer watches only those. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'edgeward-operator';

/** Whether `owner` is among the owners of `secret` (by uid). */
export function ownedBy(secret: KubernetesObject, owner: KubernetesObject): boolean {
  return (secret.metadata?.ownerReferences ?? []).some((ref) => ref.uid === owner.metadata?.uid);
}

/**
 * deletionPolicy Orphan: the Secret named `name` stays, no longer owned (nor labelled) by `owner`,
 * so garbage collection does not take it with the CR while the server resource it belongs to
 * stays. A Secret that is gone or not `owner`'s is left alone.
 */
export async function releaseOwnedSecret(
  secrets: ResourceClient<SecretObject>,
  owner: KubernetesObject,
  name: string,
): Promise<void> {
  let secret: SecretObject;
  try {
    secret = await secrets.get(owner.metadata?.namespace, name);
  } catch (error) {
    if (isNotFound(error)) return;
    throw new Error(`reading Secret ${name} to release it`, { cause: error });
  }
  if (!ownedBy(secret, owner)) return;
  const labels = { ...secret.metadata?.labels };
  delete labels[MANAGED_BY_LABEL];
  const ownerReferences = (secret.metadata?.ownerReferences ?? []).filter(
    (ref) => ref.uid !== owner.metadata?.uid,
  );
  await secrets.replace({ ...secret, metadata: { ...secret.metadata, labels, ownerReferences } });
}
