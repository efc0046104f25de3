import type { KubernetesObject } from '@kubernetes/client-node';
import { withoutSecretData } from '../../runtime/cache-transform.js';
import type { WatchSpec } from '../../runtime/controller.js';
import { getIfExists } from '../../runtime/get-if-exists.js';
import type { KubeResources } from '../../runtime/resource-client.js';
import { type ResourceKind, SECRET } from '../../runtime/resource-types.js';
import { sameJson } from '../../runtime/same-json.js';
import { controllerReference } from '../../runtime/watch-mappers.js';
import { TerminalSyncError } from '../managed/sync-errors.js';
import type { SecretObject } from './secret-values.js';

/** Put on every Secret the operator writes, so its Secret informer watches only those. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'edgeward-operator';

/**
 * The watch of the Secrets the operator writes (`ownersOf(kind)` as `map`: a deleted or edited one
 * reconciles its owner). Only the labelled ones, and without their values: owners read them with
 * a GET, the watch needs only who owns what.
 */
export function ownedSecretsWatch(map: (secret: KubernetesObject) => string[]): WatchSpec {
  return {
    kind: SECRET,
    map,
    selectors: { labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}` },
    transform: withoutSecretData,
  };
}

/** Whether `owner` is among the owners of `secret` (by uid). */
export function ownedBy(secret: KubernetesObject, owner: KubernetesObject): boolean {
  return (secret.metadata?.ownerReferences ?? []).some((ref) => ref.uid === owner.metadata?.uid);
}

/**
 * The metadata that makes a Secret `owner`'s: the managed-by label, `annotations` (what it holds),
 * and a controller reference, so garbage collection takes the Secret with its owner.
 */
export function ownedSecretMetadata(
  owner: KubernetesObject,
  ownerKind: ResourceKind,
  annotations: Record<string, string>,
) {
  return {
    labels: { [MANAGED_BY_LABEL]: MANAGED_BY },
    annotations,
    ownerReferences: [controllerReference(owner, ownerKind)],
  };
}

/** What an owned Secret must hold. */
export interface OwnedSecretContent {
  /** Merged into the Secret's annotations. */
  annotations: Record<string, string>;
  /** The whole data (base64): keys someone added to an owned Secret are not kept. */
  data: Record<string, string>;
}

/**
 * Creates the Secret `name` as `owner`'s, holding `content`, or rewrites the one `owner` already
 * owns. An owned Secret that already holds it is not written (a replayed create would otherwise
 * write it again and cause a watch event). A Secret of that name that `owner` does not own, which
 * appeared since `resolve` looked, is refused (SecretConflict): it is never overwritten.
 */
export async function writeOwnedSecret(
  secrets: KubeResources<SecretObject>,
  owner: KubernetesObject,
  ownerKind: ResourceKind,
  name: string,
  content: OwnedSecretContent,
): Promise<void> {
  const namespace = owner.metadata?.namespace;
  const wanted = ownedSecretMetadata(owner, ownerKind, content.annotations);
  const existing = await getIfExists(secrets, namespace, name);
  if (!existing) {
    await secrets.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace, ...wanted },
      type: 'Opaque',
      data: content.data,
    });
    return;
  }
  if (!ownedBy(existing, owner)) {
    throw new TerminalSyncError(
      'SecretConflict',
      `Secret ${name} appeared and is not owned by this ${ownerKind.kind}`,
    );
  }
  const labels = { ...existing.metadata?.labels, ...wanted.labels };
  const annotations = { ...existing.metadata?.annotations, ...wanted.annotations };
  const holdsIt =
    sameJson(existing.data, content.data) &&
    sameJson(existing.metadata?.annotations, annotations) &&
    sameJson(existing.metadata?.labels, labels);
  if (holdsIt) return;
  await secrets.replace({
    ...existing,
    metadata: { ...existing.metadata, labels, annotations },
    data: content.data,
  });
}

/**
 * deletionPolicy Orphan: the Secret named `name` stays, no longer owned (nor labelled) by `owner`,
 * so garbage collection does not take it with the CR while the server resource it belongs to
 * stays. A Secret that is gone or not `owner`'s is left alone.
 */
export async function releaseOwnedSecret(
  secrets: KubeResources<SecretObject>,
  owner: KubernetesObject,
  name: string,
): Promise<void> {
  const secret = await getIfExists(
    secrets,
    owner.metadata?.namespace,
    name,
    `reading Secret ${name} to release it`,
  );
  if (!secret || !ownedBy(secret, owner)) return;
  const labels = { ...secret.metadata?.labels };
  delete labels[MANAGED_BY_LABEL];
  const ownerReferences = (secret.metadata?.ownerReferences ?? []).filter(
    (ref) => ref.uid !== owner.metadata?.uid,
  );
  await secrets.replace({ ...secret, metadata: { ...secret.metadata, labels, ownerReferences } });
}
