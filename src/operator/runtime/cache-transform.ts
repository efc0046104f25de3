import type { KubernetesObject } from '@kubernetes/client-node';

/**
 * What an informer does to every object before caching it (and handing it to handlers), like
 * controller-runtime's `cache.TransformFunc`: return a trimmed copy, never mutate the input.
 */
export type CacheTransform = <T extends KubernetesObject>(object: T) => T;

/** kubectl's copy of the last applied manifest: as big as the spec again, read by no reconcile. */
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * The manager's default transform (controller-runtime's `DefaultTransform` with
 * `TransformStripManagedFields`, plus kubectl's last-applied annotation): `metadata.managedFields`
 * is often the largest part of an object and no reconcile reads it. Everything else is kept.
 * Rebuilt rather than `delete`d, so V8 keeps the objects in their compact (fast) form.
 */
export const stripForCache: CacheTransform = (object) => {
  const metadata = object.metadata;
  if (!metadata) return object;
  const hasLastApplied = metadata.annotations?.[LAST_APPLIED_ANNOTATION] !== undefined;
  if (metadata.managedFields === undefined && !hasLastApplied) return object;
  const { managedFields: _dropped, annotations, ...rest } = metadata;
  let kept = annotations;
  if (annotations && hasLastApplied) {
    const { [LAST_APPLIED_ANNOTATION]: _lastApplied, ...others } = annotations;
    kept = Object.keys(others).length > 0 ? others : undefined;
  }
  return { ...object, metadata: kept ? { ...rest, annotations: kept } : rest };
};

/**
 * For Secrets the operator only needs to know exist, change and whose they are (the watch maps read
 * metadata only; values are read with a GET when needed): `data` and `stringData` are dropped.
 */
export const withoutSecretData: CacheTransform = (object) => {
  const {
    data: _data,
    stringData: _stringData,
    ...rest
  } = object as KubernetesObject & {
    data?: unknown;
    stringData?: unknown;
  };
  return rest as typeof object;
};

/** `first`, then `second`. */
export function composeTransforms(first: CacheTransform, second: CacheTransform | undefined): CacheTransform {
  if (!second) return first;
  return (object) => second(first(object));
}
