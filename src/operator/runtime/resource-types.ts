import type { KubernetesObject } from '@kubernetes/client-node';

/** A Kubernetes resource type: what a URL path needs (group, version, plural) plus its Kind. */
export interface ResourceKind {
  /** '' for the core group (`/api/v1`). */
  group: string;
  version: string;
  kind: string;
  plural: string;
  /** Default true: every edgeward kind is namespaced. */
  namespaced?: boolean;
}

export const CONFIG_MAP: ResourceKind = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps' };
export const SECRET: ResourceKind = { group: '', version: 'v1', kind: 'Secret', plural: 'secrets' };
export const EVENT: ResourceKind = { group: '', version: 'v1', kind: 'Event', plural: 'events' };
export const LEASE: ResourceKind = {
  group: 'coordination.k8s.io',
  version: 'v1',
  kind: 'Lease',
  plural: 'leases',
};

export function apiVersionOf(kind: ResourceKind): string {
  return kind.group === '' ? kind.version : `${kind.group}/${kind.version}`;
}

/** A stable identity for maps of kinds: `plural.group/version`. */
export function kindId(kind: ResourceKind): string {
  return `${kind.plural}.${kind.group}/${kind.version}`;
}

/**
 * The REST path of a collection (no name), an object, or an object's subresource; a namespaced
 * kind without a namespace addresses all namespaces (list/watch only).
 */
export function resourcePath(
  kind: ResourceKind,
  at: { namespace?: string; name?: string; subresource?: string } = {},
): string {
  const root = kind.group === '' ? `/api/${kind.version}` : `/apis/${kind.group}/${kind.version}`;
  const scope =
    kind.namespaced !== false && at.namespace ? `/namespaces/${encodeURIComponent(at.namespace)}` : '';
  let path = `${root}${scope}/${kind.plural}`;
  if (at.name !== undefined) path += `/${encodeURIComponent(at.name)}`;
  if (at.subresource !== undefined) path += `/${at.subresource}`;
  return path;
}

/** Work-queue and cache key: `namespace/name`, or `name` for cluster-scoped objects. */
export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export function keyOf(object: KubernetesObject): string {
  const name = object.metadata?.name;
  if (!name) throw new Error(`object of kind ${object.kind ?? '?'} has no metadata.name`);
  return objectKey(object.metadata?.namespace, name);
}

export function parseKey(key: string): { namespace: string | undefined; name: string } {
  const slash = key.indexOf('/');
  return slash < 0
    ? { namespace: undefined, name: key }
    : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
