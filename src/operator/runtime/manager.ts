import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { ClientOptions } from '../../client/transport.js';
import { parseListenAddress } from '../../lib/listen-address.js';
import { type CacheTransform, composeTransforms, stripForCache } from './cache-transform.js';
import { instrumentedClientOptions } from './client-instrumentation.js';
import { type Controller, type RegisteredController, runWorker } from './controller.js';
import { EventRecorder } from './events.js';
import type { RunningServer } from './http-listener.js';
import { Informer } from './informer.js';
import { KubeApi } from './kube-api.js';
import { LeaderElector, type Lease } from './leader-election.js';
import { kubeListWatch, type SelectorOptions } from './list-watch.js';
import { createLogger, type Logger } from './logger.js';
import { OperatorMetrics, startMetricsServer } from './metrics.js';
import { startProbeServer } from './probes.js';
import { RateLimiter } from './rate-limiter.js';
import { ReferenceIndex } from './reference-index.js';
import {
  REPLICA_REPORT_LABEL,
  type ReportEntries,
  reportGroupLabel,
  reportLeaseName,
} from './replica-report-lease.js';
import { ReplicaReportPublisher } from './replica-report-publisher.js';
import { ReplicaReports } from './replica-reports.js';
import { ResourceClient } from './resource-client.js';
import { keyOf, kindId, LEASE, type ResourceKind } from './resource-types.js';
import { ResyncScheduler } from './resync.js';
import { StatusWriter } from './status-writer.js';
import { referenceStateChanged, specOrMetadataChanged } from './watch-mappers.js';

export type {
  Controller,
  ReconcileContext,
  ReconcileOutcome,
  ReconcileRequest,
  RegisteredController,
  WatchSpec,
} from './controller.js';

import { type BackoffOptions, WorkQueue } from './work-queue.js';

export interface LeaderElectionConfig {
  namespace: string;
  /** Lease name. */
  name: string;
  /** Default `<hostname>_<uuid>`. */
  identity?: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
}

export interface ManagerOptions {
  kubeConfig: KubeConfig;
  /** `--watch-namespaces`: watch only these; undefined or empty = all namespaces. */
  namespaces?: readonly string[];
  log?: Logger;
  /** Client-side limit of Kubernetes calls. Default none (qps 0): see `--kube-api-qps`. */
  kubeRateLimit?: { qps: number; burst: number };
  /** Limit of edgeward API calls made through `clientOptions()`. Default 200 qps, burst 200 (`--api-qps`). */
  apiRateLimit?: { qps: number; burst: number };
  /** Global bucket of rate-limited requeues, shared by all kinds. Default 10 qps, burst 100. */
  queueRateLimit?: { qps: number; burst: number };
  /** Per-key failure backoff. Default 1 s doubling to 5 min. */
  backoff?: BackoffOptions;
  /** Default resync period. Default 10 min; the `edgeward.dev/resync-period` annotation overrides. */
  resyncPeriodMs?: number;
  /** Leader election on a Lease; false runs workers at once (one replica, or tests). */
  leaderElection: LeaderElectionConfig | false;
  /** `--metrics-addr` (`:8080`); `off` or undefined disables. */
  metricsAddress?: string;
  /** `--probe-addr` (`:8081`); `off` or undefined disables. */
  probeAddress?: string;
  /** How long shutdown waits for in-flight reconciles before aborting them. Default 25 s. */
  shutdownTimeoutMs?: number;
  /**
   * `--max-concurrent-reconciles`: workers per kind (never two on one key). `perKind` overrides
   * by kind name; then a controller's own `workers`; then `default` (10).
   */
  concurrency?: { default: number; perKind: Readonly<Record<string, number>> };
  metrics?: OperatorMetrics;
  /**
   * Applied to every object of every informer before it is cached (controller-runtime's
   * `cache.Options.DefaultTransform`). Default `stripForCache`: no managedFields, no kubectl
   * last-applied annotation.
   */
  cacheTransform?: CacheTransform;
}

/** What the watches of one informer say about caching: all objects, or only those mapped. */
interface CachePolicy {
  all: boolean;
  maps: Array<(object: KubernetesObject) => string[]>;
}

/** Which informer of a kind, and how it trims: one informer per kind and selectors. */
export interface InformerConfig extends SelectorOptions {
  /** Watch these namespaces instead of the manager's (`--watch-namespaces`). */
  namespaces?: readonly string[];
  /**
   * Applied after the manager's `cacheTransform`. Every user of one informer must pass the same
   * function (a module constant), as they share its cache.
   */
  transform?: CacheTransform;
}

export type StopReason = 'stopped' | 'leadership-lost';

/**
 * This replica's report to the leader, and the other replicas' (see `Manager.replicaReport`).
 */
export interface ReplicaReport {
  /** What this replica reports changed: written within a second (at most once a second). */
  changed(): void;
  /** The values of `key` in the other replicas' fresh reports. */
  peerValues(key: string): string[];
  /** Hears the keys whose values in other replicas' reports changed (or went stale). */
  onPeerChange(listener: (keys: string[]) => void): void;
}

type State = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

/**
 * Runs controllers the way controller-runtime's manager does: one shared informer per kind
 * (caches warm in every replica), a work queue per controller, workers only while this replica
 * leads (but those of `everyReplica` controllers, which run in every replica), periodic resync,
 * metrics and probes, and a graceful shutdown: stop handing out work, let in-flight reconciles
 * finish (then abort them), run the shutdown hooks, stop informers, release the Lease.
 */
export class Manager {
  readonly api: KubeApi;
  readonly metrics: OperatorMetrics;
  readonly events: EventRecorder;
  readonly statusWriter = new StatusWriter();
  readonly log: Logger;
  readonly #options: ManagerOptions;
  readonly #informers = new Map<string, Informer<KubernetesObject>>();
  readonly #transforms = new Map<string, CacheTransform | undefined>();
  readonly #cachePolicies = new Map<string, CachePolicy>();
  // biome-ignore lint/suspicious/noExplicitAny: controllers of different object types share one list.
  readonly #controllers: RegisteredController<any>[] = [];
  readonly #resyncs: ResyncScheduler<KubernetesObject>[] = [];
  readonly #queueLimiter: RateLimiter;
  readonly #apiLimiter: RateLimiter;
  readonly #elector: LeaderElector | undefined;
  readonly #identity: string | undefined;
  readonly #servers: RunningServer[] = [];
  readonly #shutdownHooks: Array<() => Promise<void> | void> = [];
  #report: { publisher: ReplicaReportPublisher; peers: ReplicaReports } | undefined;
  #state: State = 'new';
  #workers: Promise<void>[] = [];
  #leaderWorkersStarted = false;
  #workAbort = new AbortController();
  #stopping: Promise<void> | undefined;
  #resolveDone!: (reason: StopReason) => void;
  /** Resolves when the manager has stopped, saying why. */
  readonly done: Promise<StopReason>;

  constructor(options: ManagerOptions) {
    this.#options = options;
    this.log = options.log ?? createLogger();
    this.metrics = options.metrics ?? new OperatorMetrics();
    const kubeLimit = options.kubeRateLimit ?? { qps: 0, burst: 30 };
    this.api = new KubeApi(options.kubeConfig, {
      limiter: new RateLimiter(kubeLimit),
      onResponse: (info) => this.metrics.apiRequest('kubernetes', info.method, info.statusCode),
    });
    this.#queueLimiter = new RateLimiter(options.queueRateLimit ?? { qps: 10, burst: 100 });
    this.#apiLimiter = new RateLimiter(options.apiRateLimit ?? { qps: 200, burst: 200 });
    this.events = new EventRecorder({ api: this.api, log: this.log });
    this.done = new Promise((resolve) => {
      this.#resolveDone = resolve;
    });
    const election = options.leaderElection;
    if (election) {
      this.#identity = election.identity ?? `${hostname()}_${randomUUID()}`;
      this.#elector = new LeaderElector({
        api: this.api,
        namespace: election.namespace,
        name: election.name,
        identity: this.#identity,
        leaseDurationMs: election.leaseDurationMs,
        renewDeadlineMs: election.renewDeadlineMs,
        retryPeriodMs: election.retryPeriodMs,
        log: this.log,
        onStartedLeading: () => {
          this.metrics.setLeader(true);
          if (this.#state === 'running') this.#startLeaderWorkers();
        },
        onStoppedLeading: () => {
          this.metrics.setLeader(false);
          // Another replica may lead now: stop at once rather than race it (the process exits
          // and restarts as a standby, as controller-runtime's managers do).
          if (this.#state === 'running' || this.#state === 'starting') void this.#stop('leadership-lost');
        },
      });
    }
  }

  get isLeader(): boolean {
    return this.#elector ? this.#elector.isLeader : this.#state === 'running';
  }

  get leaderElector(): LeaderElector | undefined {
    return this.#elector;
  }

  /** A typed client of any kind, over the manager's rate-limited, measured Kubernetes client. */
  resources<T extends KubernetesObject>(kind: ResourceKind): ResourceClient<T> {
    return new ResourceClient<T>(this.api, kind);
  }

  /** Options for an `EdgewardClient` with the manager's API rate limiter and metrics wired in. */
  clientOptions(base: ClientOptions): ClientOptions {
    return instrumentedClientOptions(base, {
      limiter: this.#apiLimiter,
      metrics: this.metrics,
      signal: this.#workAbort.signal,
    });
  }

  /** The shared informer of a kind (created on first use; started by `start`, or now if running). */
  informer<T extends KubernetesObject>(kind: ResourceKind, config: InformerConfig = {}): Informer<T> {
    const id = informerId(kind, config);
    let informer = this.#informers.get(id);
    if (!informer) {
      const base = this.#options.cacheTransform ?? stripForCache;
      informer = new Informer<KubernetesObject>({
        kind,
        source: kubeListWatch(this.api, kind, {
          labelSelector: config.labelSelector,
          fieldSelector: config.fieldSelector,
        }),
        // A cluster-scoped kind has one collection, whatever namespaces the manager watches.
        namespaces: kind.namespaced === false ? undefined : (config.namespaces ?? this.#options.namespaces),
        transform: composeTransforms(base, config.transform),
        filter: (object) => this.#caches(id, object),
        log: this.log,
      });
      this.#informers.set(id, informer);
      this.#transforms.set(id, config.transform);
      if (this.#state === 'starting' || this.#state === 'running') informer.start();
    } else if (this.#transforms.get(id) !== config.transform) {
      // Two users trimming one shared cache differently: one of them would read what it lacks.
      throw new Error(`the informer of ${kind.kind} (${id}) is already in use with another transform`);
    }
    return informer as unknown as Informer<T>;
  }

  /** Whether an informer caches `object` (see `WatchSpec.cache`). */
  #caches(id: string, object: KubernetesObject): boolean {
    const policy = this.#cachePolicies.get(id);
    if (!policy || policy.all) return true;
    return policy.maps.some((map) => map(object).length > 0);
  }

  /**
   * This replica's report to the leader, for what only this process knows and the leader needs in
   * order to write status (the sessions of the tunnel agents it runs): a Lease of its own in the
   * leader election's namespace (`replica-report-publisher.ts`), and the other replicas' read
   * through an informer of those Leases (`replica-reports.ts`). `entries` is read at every write.
   * Undefined without leader election (one replica: there is nobody else). One per manager; call
   * it before `start`.
   */
  replicaReport(entries: () => ReportEntries): ReplicaReport | undefined {
    const election = this.#options.leaderElection;
    if (!election || !this.#identity) return undefined;
    if (this.#state !== 'new') throw new Error('ask for the replica report before start()');
    if (this.#report) throw new Error('the replica report is already in use');
    const client = this.resources<Lease>(LEASE);
    const name = reportLeaseName(election.name, this.#identity);
    const groupLabel = reportGroupLabel(election.name);
    // A report stands as long as a leader's claim, and is renewed three times within it.
    const durationMs = election.leaseDurationMs ?? 15_000;
    const publisher = new ReplicaReportPublisher({
      client,
      namespace: election.namespace,
      name,
      groupLabel,
      identity: this.#identity,
      durationMs,
      renewMs: Math.max(500, Math.floor(durationMs / 3)),
      entries,
      log: this.log,
    });
    const peers = new ReplicaReports({
      ownName: name,
      client,
      namespace: election.namespace,
      isLeader: () => this.isLeader,
      log: this.log,
    });
    this.informer<Lease>(LEASE, {
      labelSelector: `${REPLICA_REPORT_LABEL}=${groupLabel}`,
      namespaces: [election.namespace],
    }).addHandlers({
      onAdd: (lease) => peers.observe(lease),
      onUpdate: (_previous, lease) => peers.observe(lease),
      onDelete: (lease) => peers.forget(lease),
    });
    this.#report = { publisher, peers };
    return {
      changed: () => publisher.changed(),
      peerValues: (key) => peers.peerValues(key),
      onPeerChange: (listener) => peers.onChange(listener),
    };
  }

  /**
   * Runs `hook` during shutdown, after the reconciles finished (or were aborted) and before the
   * informers stop and the Lease is released: where work living in the process (tunnel agents)
   * ends. Hooks run in the order they were added; a failing one is logged and the next runs.
   */
  onShutdown(hook: () => Promise<void> | void): void {
    this.#shutdownHooks.push(hook);
  }

  register<T extends KubernetesObject>(controller: Controller<T>): RegisteredController<T> {
    if (this.#state !== 'new') throw new Error('register controllers before start()');
    const kind = controller.kind.kind;
    const informer = this.informer<T>(controller.kind);
    const queue = new WorkQueue({ limiter: this.#queueLimiter, backoff: this.#options.backoff });
    const references = controller.references ? new ReferenceIndex<T>(controller.references) : undefined;
    const shouldEnqueue = controller.shouldEnqueue ?? specOrMetadataChanged;
    informer.addHandlers({
      onAdd: (object) => {
        references?.observe(object);
        queue.add(keyOf(object));
      },
      onUpdate: (previous, object) => {
        references?.observe(object);
        if (shouldEnqueue(previous, object)) queue.add(keyOf(object));
      },
      onDelete: (object) => {
        references?.forget(keyOf(object));
        queue.add(keyOf(object));
      },
    });
    for (const watch of controller.watches ?? []) {
      const map =
        watch.map ??
        ((object: KubernetesObject) =>
          references?.referrersOf({
            kind: watch.kind.kind,
            namespace: object.metadata?.namespace,
            name: object.metadata?.name ?? '',
          }) ?? []);
      const enqueue = (...objects: KubernetesObject[]) => {
        for (const key of new Set(objects.flatMap(map))) queue.add(key);
      };
      const watchedChanged = watch.shouldEnqueue ?? referenceStateChanged;
      const config = { ...watch.selectors, transform: watch.transform };
      const id = informerId(watch.kind, config);
      const policy = this.#cachePolicies.get(id) ?? { all: false, maps: [] };
      policy.all ||= (watch.cache ?? 'all') === 'all';
      policy.maps.push(map);
      this.#cachePolicies.set(id, policy);
      this.informer(watch.kind, config).addHandlers({
        onAdd: (object) => enqueue(object),
        onUpdate: (previous, object) => {
          if (watchedChanged(previous, object)) enqueue(previous, object);
        },
        onDelete: (object) => enqueue(object),
      });
    }
    this.#resyncs.push(
      new ResyncScheduler<KubernetesObject>({
        list: () => informer.cache.list(),
        enqueue: (key) => queue.add(key),
        defaultPeriodMs: this.#options.resyncPeriodMs,
        onInvalidPeriod: (object, value) =>
          this.log.warn(
            { kind, key: keyOf(object), value },
            'invalid edgeward.dev/resync-period; using the default',
          ),
      }),
    );
    this.metrics.trackQueueDepth(kind, () => queue.length);
    const registered: RegisteredController<T> = { controller, informer, queue, references };
    this.#controllers.push(registered);
    return registered;
  }

  /**
   * Starts servers and informers, waits until every cache is synced, then runs workers (at once,
   * or when this replica becomes leader). Resolves when the caches are synced.
   */
  async start(signal?: AbortSignal): Promise<void> {
    if (this.#state !== 'new') throw new Error(`manager already ${this.#state}`);
    this.#state = 'starting';
    const metricsAddress = parseListenAddress(this.#options.metricsAddress ?? 'off', '--metrics-addr');
    const probeAddress = parseListenAddress(this.#options.probeAddress ?? 'off', '--probe-addr');
    if (metricsAddress) this.#servers.push(await startMetricsServer(metricsAddress, this.metrics));
    if (probeAddress) {
      this.#servers.push(
        await startProbeServer(probeAddress, {
          liveness: { ping: () => true },
          readiness: {
            'informers-synced': () => this.cachesSynced(),
            'leader-election': () => !this.#elector || this.#elector.running,
            'not-shutting-down': () => this.#state === 'starting' || this.#state === 'running',
          },
        }),
      );
    }
    // Informers that cache only mapped objects start last, when the indexes their maps read are full.
    const mappedOnly = (id: string) => this.#cachePolicies.get(id)?.all === false;
    const phases = [
      [...this.#informers].filter(([id]) => !mappedOnly(id)),
      [...this.#informers].filter(([id]) => mappedOnly(id)),
    ];
    try {
      for (const phase of phases) {
        for (const [, informer] of phase) informer.start();
        await Promise.all(phase.map(([, informer]) => informer.waitForSync(signal)));
      }
    } catch (error) {
      await this.stop();
      throw new Error('caches did not sync', { cause: error });
    }
    if (this.#state !== 'starting') return;
    this.log.info({ informers: this.#informers.size }, 'caches synced');
    this.#state = 'running';
    for (const resync of this.#resyncs) resync.start();
    this.#report?.peers.start();
    this.#startWorkers((registered) => registered.controller.everyReplica === true);
    if (this.#elector) {
      this.#elector.run();
    } else {
      this.#startLeaderWorkers();
    }
  }

  /** The URLs of the metrics and probe servers, in that order of what is enabled. */
  get serverUrls(): string[] {
    return this.#servers.map((server) => server.url);
  }

  cachesSynced(): boolean {
    return [...this.#informers.values()].every((informer) => informer.hasSynced());
  }

  /** Graceful shutdown (idempotent); SIGTERM calls this via `installSignalHandlers`. */
  stop(): Promise<void> {
    return this.#stop('stopped');
  }

  /** SIGTERM and SIGINT stop the manager; returns a function that removes the handlers. */
  installSignalHandlers(): () => void {
    const onSignal = (signal: NodeJS.Signals) => {
      this.log.info({ signal }, 'shutting down');
      void this.stop();
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    return () => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
    };
  }

  #stop(reason: StopReason): Promise<void> {
    this.#stopping ??= this.#shutdown(reason);
    return this.#stopping;
  }

  async #shutdown(reason: StopReason): Promise<void> {
    this.#state = 'stopping';
    for (const resync of this.#resyncs) resync.stop();
    // Stop handing out work; reconciles in flight go on until they finish or time runs out.
    for (const { queue } of this.#controllers) queue.shutDown();
    // After losing the Lease another replica may already be working: in-flight reconciles are
    // aborted at once instead of drained, so the two overlap as little as possible.
    const timeoutMs = reason === 'leadership-lost' ? 0 : (this.#options.shutdownTimeoutMs ?? 25_000);
    const drained = await Promise.race([
      Promise.all(this.#workers).then(() => true),
      sleep(timeoutMs, false, { ref: false }),
    ]);
    if (!drained) {
      this.log.warn({ timeoutMs }, 'reconciles still running at the shutdown timeout: aborting them');
      this.#workAbort.abort(new Error('manager shutting down'));
      await Promise.race([Promise.all(this.#workers), sleep(2000, undefined, { ref: false })]);
    }
    for (const hook of this.#shutdownHooks) {
      try {
        await hook();
      } catch (error) {
        this.log.error({ err: error }, 'a shutdown hook failed');
      }
    }
    this.#report?.peers.stop();
    await this.#report?.publisher.stop();
    await Promise.all([...this.#informers.values()].map((informer) => informer.stop()));
    // Release the Lease only now, so the next leader never overlaps our last reconciles (after a
    // lost leadership this is a no-op unless we had taken the Lease back meanwhile).
    await this.#elector?.stop({ release: true });
    this.metrics.setLeader(false);
    await Promise.all(this.#servers.map((server) => server.close()));
    this.api.close();
    this.#state = 'stopped';
    this.log.info({ reason }, 'manager stopped');
    this.#resolveDone(reason);
  }

  /** The leader's work: every controller's workers but those already running in every replica. */
  #startLeaderWorkers(): void {
    if (this.#leaderWorkersStarted) return;
    this.#leaderWorkersStarted = true;
    // Reconciled by this replica before, but without writing: due again, now as the leader.
    for (const registered of this.#controllers) {
      if (!registered.controller.everyReplica) continue;
      for (const key of registered.informer.cache.keys()) registered.queue.add(key);
    }
    this.#startWorkers((registered) => !registered.controller.everyReplica);
  }

  // biome-ignore lint/suspicious/noExplicitAny: controllers of different object types share one list.
  #startWorkers(which: (registered: RegisteredController<any>) => boolean): void {
    const chosen = this.#controllers.filter(which);
    if (chosen.length === 0) return;
    this.log.info({ controllers: chosen.length }, 'starting workers');
    for (const registered of chosen) {
      // Everything cached is due once when work starts (a standby's queue may hold only part).
      for (const key of registered.informer.cache.keys()) registered.queue.add(key);
      const { kind } = registered.controller.kind;
      const concurrency = this.#options.concurrency;
      const workers =
        concurrency?.perKind[kind] ?? registered.controller.workers ?? concurrency?.default ?? 10;
      for (let worker = 0; worker < workers; worker++) {
        this.#workers.push(
          runWorker(registered, {
            log: this.log,
            metrics: this.metrics,
            signal: this.#workAbort.signal,
            isLeader: () => this.isLeader,
          }),
        );
      }
    }
  }
}

function informerId(kind: ResourceKind, config: InformerConfig): string {
  const namespaces = config.namespaces ? `&in=${[...config.namespaces].sort().join(',')}` : '';
  return `${kindId(kind)}?${config.labelSelector ?? ''}&${config.fieldSelector ?? ''}${namespaces}`;
}
