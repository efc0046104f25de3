import { randomBytes } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { CacheTransform } from './cache-transform.js';
import type { Informer } from './informer.js';
import type { SelectorOptions } from './list-watch.js';
import { type Logger, objectLogger } from './logger.js';
import type { OperatorMetrics } from './metrics.js';
import type { ReferenceExtractor, ReferenceIndex } from './reference-index.js';
import { parseKey, type ResourceKind } from './resource-types.js';
import type { WorkQueue } from './work-queue.js';

/*
 * A controller and its reconcile loop, as controller-runtime splits them: what a controller gives
 * the manager (its kind, reconcile, watches) and the worker that takes keys off its queue. The
 * manager (manager.ts) owns the informers, queues, leader election and shutdown around them.
 */

export interface ReconcileRequest {
  /** `namespace/name` */
  key: string;
  namespace: string | undefined;
  name: string;
}

export interface ReconcileContext {
  /** Aborted when shutdown outlasts the drain timeout or leadership is lost: stop early. */
  signal: AbortSignal;
  /** Carries kind, namespace, name and a reconcileId. */
  log: Logger;
  /** Failed reconciles of this key since its last success. */
  failures: number;
  /**
   * Whether this replica led when the reconcile began. Always true for a controller that runs only
   * on the leader; an `everyReplica` controller writes nothing while it is false.
   */
  leading: boolean;
}

export interface ReconcileOutcome {
  /** Reconcile again after this long (polling a server-side state); the backoff is reset. */
  requeueAfterMs?: number;
}

/** Another kind whose changes should reconcile objects of the controller's kind. */
export interface WatchSpec {
  kind: ResourceKind;
  /**
   * Keys (`namespace/name`) of the controller's objects to reconcile when `object` changes.
   * Default: the objects whose `references` name it (via the controller's reference index).
   */
  map?: (object: KubernetesObject) => string[];
  /** Narrow the informer (e.g. only Secrets with the operator's label). */
  selectors?: SelectorOptions;
  /** Trim the watched objects further than the manager's `cacheTransform` (see `InformerConfig`). */
  transform?: CacheTransform;
  /**
   * `'mapped'`: cache only the objects some watch of this informer maps to a key (e.g. only the
   * Secrets a spec names, not every Secret of the cluster); each watch of the informer must say
   * so, or it caches all. The informer then starts after the others have synced, so the reference
   * indexes its maps read are full. A reader of the cache must read what is missing directly: an
   * object named after its last change is cached only from its next one. Default `'all'`.
   */
  cache?: 'all' | 'mapped';
  /**
   * Which updates of the watched object enqueue its dependents. Default
   * `referenceStateChanged`: for edgeward kinds only a new server id, a Ready flip or a deletion
   * (a referenced object's own status rewrites do not concern the objects naming it).
   */
  shouldEnqueue?: (previous: KubernetesObject, object: KubernetesObject) => boolean;
}

/** What a controller gives the manager. */
export interface Controller<T extends KubernetesObject = KubernetesObject> {
  kind: ResourceKind;
  /**
   * Brings one object to its desired state; read it from `manager.informer(kind).cache` (absent =
   * deleted). Throwing retries with per-key exponential backoff; returning `requeueAfterMs`
   * schedules the next look. Must be idempotent: it also runs on every resync.
   */
  reconcile(
    request: ReconcileRequest,
    context: ReconcileContext,
  ): Promise<ReconcileOutcome | undefined> | Promise<void>;
  /** Concurrent reconciles of this kind (never two of one key). Default 2. */
  workers?: number;
  /**
   * Reconcile in every replica, not only the leader (from the moment the caches are synced): for
   * work that lives in the process, such as a tunnel agent, whose loss with one replica must not
   * matter. Such a reconcile may write (status, Events) only when `context.leading`; every key is
   * reconciled again when this replica starts leading. Default false.
   */
  everyReplica?: boolean;
  /** What an object names (IPPolicies, Secrets, ...), for the reverse index that `watches` use. */
  references?: ReferenceExtractor<T>;
  watches?: WatchSpec[];
  /** Which updates of the kind's own objects enqueue. Default `specOrMetadataChanged`. */
  shouldEnqueue?: (previous: T, object: T) => boolean;
}

/** The handle `register` returns: the controller's queue and reference index. */
export interface RegisteredController<T extends KubernetesObject> {
  readonly controller: Controller<T>;
  readonly informer: Informer<T>;
  readonly queue: WorkQueue;
  readonly references: ReferenceIndex<T> | undefined;
}

/**
 * One worker of a controller: takes keys off its queue until the queue shuts down, reconciles each
 * (never two of one key at once), and schedules the next look: forgotten after a success,
 * `requeueAfterMs` when asked, per-key exponential backoff after a failure.
 */
export async function runWorker<T extends KubernetesObject>(
  registered: RegisteredController<T>,
  runtime: { log: Logger; metrics: OperatorMetrics; signal: AbortSignal; isLeader: () => boolean },
): Promise<void> {
  const { controller, queue } = registered;
  const kind = controller.kind.kind;
  for (let key = await queue.get(); key !== undefined; key = await queue.get()) {
    const { namespace, name } = parseKey(key);
    const log = objectLogger(runtime.log, {
      kind,
      namespace,
      name,
      reconcileId: randomBytes(4).toString('hex'),
    });
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const outcome = await controller.reconcile(
        { key, namespace, name },
        { signal: runtime.signal, log, failures: queue.failures(key), leading: runtime.isLeader() },
      );
      queue.forget(key);
      // This outcome supersedes whatever an earlier reconcile of the key scheduled.
      queue.cancelDelayed(key);
      if (outcome?.requeueAfterMs !== undefined) {
        queue.addAfter(key, outcome.requeueAfterMs);
        runtime.metrics.observeReconcile(kind, 'requeue', seconds());
      } else {
        runtime.metrics.observeReconcile(kind, 'success', seconds());
      }
    } catch (error) {
      runtime.metrics.observeReconcile(kind, 'error', seconds());
      if (!queue.shuttingDown) {
        const delay = queue.addRateLimited(key);
        runtime.metrics.retried(kind);
        log.warn({ err: error, retryInMs: delay, failures: queue.failures(key) }, 'reconcile failed');
      }
    } finally {
      queue.done(key);
    }
  }
}
