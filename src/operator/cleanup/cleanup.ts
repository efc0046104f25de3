import type { KubernetesObject } from '@kubernetes/client-node';
import { PAUSED_ANNOTATION } from '../controllers/managed/managed-resource.js';
import { resourceKindOf } from '../controllers/resource-types.js';
import { KIND_DEFINITIONS } from '../kinds.js';
import { delay } from '../runtime/delay.js';
import { FINALIZER, hasFinalizer, isBeingDeleted, removeFinalizer } from '../runtime/finalizers.js';
import type { KubeApi } from '../runtime/kube-api.js';
import { isKubeNotFound } from '../runtime/kube-errors.js';
import { ResourceClient } from '../runtime/resource-client.js';
import { keyOf, type ResourceKind } from '../runtime/resource-types.js';

/**
 * What to do with the edgeward objects when the operator goes (or is gone):
 * - `stuck`: let go of objects being deleted that wait on the operator's finalizer (it is not
 *   running): they go; their server resources stay. The recovery for a "stuck in Terminating".
 * - `orphan`: before the operator goes for good, pause every object (the operator, if still
 *   running, keeps off it) and take its finalizer: deleting them later leaves the server alone.
 * - `delete`: delete every object and wait while the running operator deletes its server
 *   resource and lets it go. Needs the operator; what is left at the timeout is reported.
 */
export type CleanupMode = 'stuck' | 'orphan' | 'delete';

export interface CleanupOptions {
  mode: CleanupMode;
  /** Namespaces to clean; empty: all. */
  namespaces: string[];
  /** `delete`: how long to wait for the operator. */
  timeoutMs: number;
  onObject?: (line: string) => void;
}

export interface CleanupReport {
  /** `kind namespace/name` of each object changed. */
  changed: string[];
  /** `delete` only: what was still there at the timeout, with its Ready message. */
  left: string[];
}

type EdgewardObject = KubernetesObject & {
  status?: { conditions?: Array<{ type: string; reason?: string; message?: string }> };
};

const describe = (kind: ResourceKind, object: KubernetesObject) => `${kind.kind} ${keyOf(object)}`;

export async function cleanup(kube: KubeApi, options: CleanupOptions): Promise<CleanupReport> {
  const report: CleanupReport = { changed: [], left: [] };
  const clients = KIND_DEFINITIONS.map(
    (definition) => new ResourceClient<EdgewardObject>(kube, resourceKindOf(definition)),
  );
  for (const client of clients) {
    for (const object of await listAll(client, options.namespaces)) {
      const changed = await cleanOne(client, object, options.mode);
      if (!changed) continue;
      const line = `${describe(client.kind, object)}: ${changed}`;
      report.changed.push(line);
      options.onObject?.(line);
    }
  }
  if (options.mode === 'delete') report.left = await waitGone(clients, options);
  return report;
}

async function cleanOne(
  client: ResourceClient<EdgewardObject>,
  object: EdgewardObject,
  mode: CleanupMode,
): Promise<string | undefined> {
  const { namespace, name = '' } = object.metadata ?? {};
  try {
    if (mode === 'delete') {
      if (isBeingDeleted(object)) return undefined;
      await client.delete(namespace, name);
      return 'deleted';
    }
    if (mode === 'stuck' && !isBeingDeleted(object)) return undefined;
    if (mode === 'orphan' && object.metadata?.annotations?.[PAUSED_ANNOTATION] !== 'true') {
      // Paused first: a running operator would put its finalizer back on an object it manages.
      await client.patch(namespace, name, { metadata: { annotations: { [PAUSED_ANNOTATION]: 'true' } } });
    }
    if (!hasFinalizer(object, FINALIZER)) return mode === 'orphan' ? 'paused' : undefined;
    await removeFinalizer(client, object);
    return mode === 'orphan' ? 'paused, finalizer removed' : 'finalizer removed';
  } catch (error) {
    if (isKubeNotFound(error)) return undefined;
    throw new Error(`${describe(client.kind, object)}: ${mode}`, { cause: error });
  }
}

async function listAll(
  client: ResourceClient<EdgewardObject>,
  namespaces: string[],
): Promise<EdgewardObject[]> {
  const objects: EdgewardObject[] = [];
  for (const namespace of namespaces.length > 0 ? namespaces : [undefined]) {
    let next: string | undefined;
    do {
      const page = await client.list(namespace, { limit: 500, ...(next ? { continue: next } : {}) });
      objects.push(...page.items);
      next = page.continue;
    } while (next);
  }
  return objects;
}

async function waitGone(
  clients: ResourceClient<EdgewardObject>[],
  options: CleanupOptions,
): Promise<string[]> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const left: string[] = [];
    for (const client of clients) {
      for (const object of await listAll(client, options.namespaces)) {
        const ready = object.status?.conditions?.find((condition) => condition.type === 'Ready');
        left.push(
          `${describe(client.kind, object)}${ready?.message ? `: ${ready.reason}: ${ready.message}` : ''}`,
        );
      }
    }
    if (left.length === 0 || Date.now() >= deadline) return left;
    await delay(1000);
  }
}
