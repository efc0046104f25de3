import type { KubernetesObject } from '@kubernetes/client-node';
import { ConditionType, isConditionTrue } from '../../runtime/conditions.js';
import type { InformerReader } from '../../runtime/informer.js';
import type { ManagedStatus, Resolution } from '../managed/managed-resource.js';

/** An object another one names by `{ name }` (same namespace): its status is what the reference needs. */
export type ReferencedObject = KubernetesObject & { status?: ManagedStatus };

/** The server id of a referenced object once it is Ready; undefined before (or without an id). */
export function readyServerId(object: ReferencedObject | undefined): string | undefined {
  const id = object?.status?.id;
  return id && isConditionTrue(object.status?.conditions, ConditionType.Ready) ? id : undefined;
}

/**
 * The server ids of the objects `refs` names, once every one is Ready; else ReferenceNotReady
 * naming the first that is not, at its spec `field`. No retry timer: the controller watches the
 * referenced kind, so its becoming Ready enqueues the referrer. No refs (undefined) resolve to
 * undefined, so raw ids in the spec can stand in.
 */
export function resolveReadyIds(
  informer: InformerReader<ReferencedObject>,
  namespace: string | undefined,
  refs: readonly { name: string }[] | undefined,
  field: string,
  kind: string,
): Resolution<string[] | undefined> {
  if (!refs) return { ready: true, value: undefined };
  const ids: string[] = [];
  for (const { name } of refs) {
    const id = readyServerId(informer.cache.get(namespace, name));
    if (!id) return notReady(field, kind, name);
    ids.push(id);
  }
  return { ready: true, value: ids };
}

/** The server id of the one object `ref` names, once it is Ready (as `resolveReadyIds`). */
export function resolveReadyId(
  informer: InformerReader<ReferencedObject>,
  namespace: string | undefined,
  ref: { name: string },
  field: string,
  kind: string,
): Resolution<string> {
  const id = readyServerId(informer.cache.get(namespace, ref.name));
  return id ? { ready: true, value: id } : notReady(field, kind, ref.name);
}

type NotReady = Extract<Resolution<never>, { ready: false }>;

function notReady(field: string, kind: string, name: string): NotReady {
  return { ready: false, reason: 'ReferenceNotReady', message: `${field}: ${kind} ${name} is not Ready` };
}
