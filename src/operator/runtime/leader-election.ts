import type { KubernetesObject } from '@kubernetes/client-node';
import { pause } from './delay.js';
import type { KubeApi } from './kube-api.js';
import { describeKubeError, isConflict, isKubeNotFound } from './kube-errors.js';
import { type Logger, silentLogger } from './logger.js';
import { ResourceClient } from './resource-client.js';
import { LEASE } from './resource-types.js';

export interface Lease extends KubernetesObject {
  spec?: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number;
    acquireTime?: string | null;
    renewTime?: string | null;
    leaseTransitions?: number;
  };
}

export interface LeaderElectionOptions {
  api: KubeApi;
  /** Where the coordination.k8s.io/v1 Lease lives. */
  namespace: string;
  name: string;
  /** Unique per replica (pod name + random suffix). */
  identity: string;
  /** How long a holder's claim lasts without renewal. Default 15 s. */
  leaseDurationMs?: number;
  /** A leader that could not renew for this long steps down. Default 10 s. */
  renewDeadlineMs?: number;
  /** Between attempts to acquire or renew. Default 2 s. */
  retryPeriodMs?: number;
  onStartedLeading?: () => void;
  onStoppedLeading?: () => void;
  /** Called when the observed holder changes (including to ourselves). */
  onNewLeader?: (identity: string) => void;
  log?: Logger;
}

/** metav1.MicroTime: RFC 3339 with microseconds. */
export function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/**
 * Leader election on a Lease, as client-go's leaderelection: a candidate takes the Lease when it
 * is free or its holder has not renewed within the lease duration (measured on our own clock
 * from when we last saw the record change, so clock skew between replicas does not matter), and
 * renews it every retry period; a leader that cannot renew for the renew deadline calls
 * onStoppedLeading (and becomes a candidate again). Updates are PUTs with the resourceVersion
 * read, so two candidates cannot both win. `stop()` releases a held Lease (empty holder, 1 s
 * duration) so a standby takes over within one retry period instead of a lease duration.
 */
export class LeaderElector {
  readonly #options: Required<
    Pick<LeaderElectionOptions, 'leaseDurationMs' | 'renewDeadlineMs' | 'retryPeriodMs'>
  > &
    LeaderElectionOptions;
  readonly #client: ResourceClient<Lease>;
  readonly #log: Logger;
  #leading = false;
  #observed: { holder: string; renewTime: string; resourceVersion: string } | undefined;
  #observedAt = 0;
  #lease: Lease | undefined;
  #abort: AbortController | undefined;
  #loop: Promise<void> | undefined;

  constructor(options: LeaderElectionOptions) {
    this.#options = {
      ...options,
      leaseDurationMs: options.leaseDurationMs ?? 15_000,
      renewDeadlineMs: options.renewDeadlineMs ?? 10_000,
      retryPeriodMs: options.retryPeriodMs ?? 2_000,
    };
    if (this.#options.renewDeadlineMs >= this.#options.leaseDurationMs) {
      throw new Error('leader election: the renew deadline must be shorter than the lease duration');
    }
    this.#client = new ResourceClient<Lease>(options.api, LEASE);
    this.#log = (options.log ?? silentLogger).child({ lease: `${options.namespace}/${options.name}` });
  }

  get identity(): string {
    return this.#options.identity;
  }

  get isLeader(): boolean {
    return this.#leading;
  }

  /** True between `run()` and `stop()`: a candidate or the leader. */
  get running(): boolean {
    return this.#abort !== undefined && !this.#abort.signal.aborted;
  }

  /** The holder last seen on the Lease. */
  get observedLeader(): string | undefined {
    return this.#observed?.holder || undefined;
  }

  /** Starts campaigning in the background. */
  run(): void {
    if (this.#loop) return;
    this.#abort = new AbortController();
    this.#loop = this.#campaign(this.#abort.signal);
  }

  /** Stops campaigning; a leader calls onStoppedLeading and (by default) releases the Lease. */
  async stop(options: { release?: boolean } = {}): Promise<void> {
    this.#abort?.abort();
    await this.#loop;
    this.#loop = undefined;
    if (this.#leading) {
      if (options.release ?? true) await this.#release();
      this.#setLeading(false);
    }
  }

  async #campaign(signal: AbortSignal): Promise<void> {
    const { retryPeriodMs, renewDeadlineMs } = this.#options;
    while (!signal.aborted) {
      // Candidate: try every retry period (jittered, so standbys do not collide).
      while (!signal.aborted && !(await this.#tryAcquireOrRenew(signal))) {
        if (!(await pause(retryPeriodMs * (1 + Math.random() * 0.2), signal))) return;
      }
      if (signal.aborted) return;
      this.#setLeading(true);
      // Leader: renew every retry period; give up when no renewal succeeded for the deadline.
      let renewed = Date.now();
      while (!signal.aborted) {
        if (!(await pause(retryPeriodMs, signal))) return;
        if (await this.#tryAcquireOrRenew(signal)) {
          renewed = Date.now();
        } else if (this.observedLeader && this.observedLeader !== this.#options.identity) {
          this.#log.warn({ holder: this.observedLeader }, 'another replica holds the lease: stepping down');
          this.#setLeading(false);
          break;
        } else if (Date.now() - renewed >= renewDeadlineMs) {
          this.#log.warn('could not renew the lease within the renew deadline: stepping down');
          this.#setLeading(false);
          break;
        }
      }
    }
  }

  /** One attempt; false on any failure (logged): the loop's timing decides what a failure means. */
  async #tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    try {
      return await this.#attempt(signal);
    } catch (error) {
      this.#log.warn({ err: error }, 'leader election attempt failed');
      return false;
    }
  }

  async #attempt(signal: AbortSignal): Promise<boolean> {
    const { namespace, name, identity, leaseDurationMs } = this.#options;
    const now = new Date();
    const leaseSpec = (acquireTime: string, transitions: number) => ({
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      acquireTime,
      renewTime: microTime(now),
      leaseTransitions: transitions,
    });
    const callSignal = AbortSignal.any([signal, AbortSignal.timeout(this.#options.renewDeadlineMs / 2)]);
    let lease: Lease;
    try {
      lease = await this.#client.get(namespace, name, callSignal);
    } catch (error) {
      if (!isKubeNotFound(error)) {
        this.#log.warn({ error: describeKubeError(error) }, 'reading the lease failed');
        return false;
      }
      try {
        this.#lease = await this.#client.create({
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name, namespace },
          spec: leaseSpec(microTime(now), 0),
        });
        this.#observe(this.#lease);
        return true;
      } catch (createError) {
        if (!isConflict(createError)) {
          this.#log.warn({ error: describeKubeError(createError) }, 'creating the lease failed');
        }
        return false;
      }
    }
    this.#observe(lease);
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const durationMs = (spec.leaseDurationSeconds ?? 0) * 1000;
    if (holder && holder !== identity && this.#observedAt + durationMs > Date.now()) return false;
    const ours = holder === identity;
    const next: Lease = {
      ...lease,
      spec: {
        ...spec,
        ...leaseSpec(
          ours && spec.acquireTime ? spec.acquireTime : microTime(now),
          (spec.leaseTransitions ?? 0) + (ours ? 0 : 1),
        ),
      },
    };
    try {
      this.#lease = await this.#client.replace(next);
      this.#observe(this.#lease);
      return true;
    } catch (error) {
      if (!isConflict(error))
        this.#log.warn({ error: describeKubeError(error) }, 'updating the lease failed');
      return false;
    }
  }

  #observe(lease: Lease): void {
    const record = {
      holder: lease.spec?.holderIdentity ?? '',
      renewTime: lease.spec?.renewTime ?? '',
      resourceVersion: lease.metadata?.resourceVersion ?? '',
    };
    const changed =
      !this.#observed ||
      this.#observed.holder !== record.holder ||
      this.#observed.renewTime !== record.renewTime;
    if (!changed) return;
    const previousHolder = this.#observed?.holder;
    this.#observed = record;
    this.#observedAt = Date.now();
    if (record.holder && record.holder !== previousHolder) this.#options.onNewLeader?.(record.holder);
  }

  async #release(): Promise<void> {
    const lease = this.#lease;
    if (!lease || lease.spec?.holderIdentity !== this.#options.identity) return;
    const now = microTime(new Date());
    try {
      await this.#client.replace({
        ...lease,
        spec: {
          ...lease.spec,
          holderIdentity: null,
          leaseDurationSeconds: 1,
          acquireTime: now,
          renewTime: now,
        },
      });
      this.#log.info('released the lease');
    } catch (error) {
      // Someone renewed over us already, or the API is away: the lease simply expires.
      this.#log.warn({ error: describeKubeError(error) }, 'releasing the lease failed');
    }
  }

  #setLeading(leading: boolean): void {
    if (this.#leading === leading) return;
    this.#leading = leading;
    this.#log.info({ identity: this.#options.identity }, leading ? 'started leading' : 'stopped leading');
    try {
      if (leading) this.#options.onStartedLeading?.();
      else this.#options.onStoppedLeading?.();
    } catch (error) {
      this.#log.error({ err: error }, 'leader election callback failed');
    }
  }
}
