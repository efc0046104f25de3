import type { EventReporter } from '../../runtime/events.js';
import type { InformerReader } from '../../runtime/informer.js';
import type { KubeResources } from '../../runtime/resource-client.js';
import type { StatusWriter } from '../../runtime/status-writer.js';
import type { CreateMemory } from './create-memory.js';
import type { ManagedObject, RemoteResource, ResourceSync } from './managed-resource.js';

/**
 * What the reconcile of one managed kind works with: its objects (live and cached), its sync, and
 * where status and Events go. `registerManaged` takes them from the manager; tests from fakes.
 */
export interface ManagedController<T extends ManagedObject, R, Remote extends RemoteResource> {
  client: KubeResources<T>;
  informer: InformerReader<T>;
  sync: ResourceSync<T, R, Remote>;
  statusWriter: StatusWriter;
  events: EventReporter;
  /** This process's own creates the cache may not show yet (one per controller). */
  memory: CreateMemory<T, R>;
}
