import { describeKubeError, isConflict, isKubeNotFound } from './kube-errors.js';
import { type Lease, microTime } from './leader-election.js';
import type { Logger } from './logger.js';
import {
  encodeEntries,
  REPLICA_REPORT_ANNOTATION,
  REPLICA_REPORT_LABEL,
  type ReportEntries,
} from './replica-report-lease.js';
import type { KubeResources } from './resource-client.js';

export interface ReplicaReportPublisherOptions {
  client: KubeResources<Lease>;
  namespace: string;
  /** This replica's report Lease (`reportLeaseName`). */
  name: string;
  /** The label value selecting the reports of this operator (`reportGroupLabel`). */
  groupLabel: string;
  /** This replica's leader-election identity. */
  identity: string;
  /** How long the report stands without renewal (its `leaseDurationSeconds`). */
  durationMs: number;
  /** Between renewals while there is something to report. */
  renewMs: number;
  /** At least this long between two writes: a flapping entry costs one write per interval. Default 1 s. */
  minIntervalMs?: number;
  /** What to report, read at every write. */
  entries: () => ReportEntries;
  log: Logger;
  now?: () => Date;
}

/**
 * Keeps this replica's report Lease: written soon after `changed()` (coalesced to one write per
 * `minIntervalMs`), renewed every `renewMs`, and deleted while there is nothing to report (so a
 * replica with nothing to say writes nothing) and on `stop()`. Only this replica writes it; the
 * leader deletes it once it went stale (`ReplicaReports`), and a write then makes it again.
 */
export class ReplicaReportPublisher {
  readonly #options: ReplicaReportPublisherOptions;
  readonly #minIntervalMs: number;
  readonly #now: () => Date;
  /** The Lease as last written (its resourceVersion makes the next PUT optimistic). */
  #lease: Lease | undefined;
  #timer: NodeJS.Timeout | undefined;
  #dueAt = Number.POSITIVE_INFINITY;
  #lastWriteAt = Number.NEGATIVE_INFINITY;
  #writing: Promise<void> | undefined;
  #dirty = false;
  /** The last write failed: tried again at the next renewal, not at once. */
  #failed = false;
  #stopped = false;
  /** Keys left out of the last write for size: logged when it changes, not at every renewal. */
  #omitted = 0;

  constructor(options: ReplicaReportPublisherOptions) {
    this.#options = options;
    this.#minIntervalMs = options.minIntervalMs ?? 1000;
    this.#now = options.now ?? (() => new Date());
  }

  /** What to report changed: write it within `minIntervalMs`. */
  changed(): void {
    this.#dirty = true;
    this.#schedule(this.#lastWriteAt + this.#minIntervalMs - Date.now());
  }

  /** Stops renewing and deletes the report (its entries end with the replica). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#writing;
    if (!this.#lease) return;
    try {
      await this.#delete();
    } catch (error) {
      // The leader drops it once it goes stale, one lease duration from now.
      this.#options.log.warn(
        { lease: this.#options.name, error: describeKubeError(error) },
        'deleting the replica report failed',
      );
    }
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    const dueAt = Date.now() + Math.max(0, delayMs);
    if (this.#timer !== undefined && this.#dueAt <= dueAt) return;
    clearTimeout(this.#timer);
    this.#dueAt = dueAt;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#dueAt = Number.POSITIVE_INFINITY;
      this.#run();
    }, dueAt - Date.now());
    this.#timer.unref();
  }

  #run(): void {
    if (this.#writing) {
      // One write at a time: the one in flight reschedules when it ends.
      this.#dirty = true;
      return;
    }
    this.#writing = this.#write().finally(() => {
      this.#writing = undefined;
      if (this.#dirty) this.#schedule(this.#minIntervalMs);
      else if (this.#lease || this.#failed) this.#schedule(this.#options.renewMs);
    });
  }

  async #write(): Promise<void> {
    this.#dirty = false;
    this.#failed = false;
    this.#lastWriteAt = Date.now();
    const entries = this.#options.entries();
    try {
      if (Object.keys(entries).length === 0) {
        if (this.#lease) await this.#delete();
        return;
      }
      await this.#put(entries);
    } catch (error) {
      // Retried at the next renewal; until then the leader reads the last report written.
      this.#options.log.warn(
        { lease: this.#options.name, error: describeKubeError(error) },
        'writing the replica report failed',
      );
      this.#failed = true;
    }
  }

  async #put(entries: ReportEntries): Promise<void> {
    const { client, namespace, name } = this.#options;
    const { json, omitted } = encodeEntries(entries);
    if (omitted !== this.#omitted) {
      this.#omitted = omitted;
      if (omitted > 0)
        this.#options.log.warn(
          { lease: name, omitted },
          'the replica report is full: the leader does not see what this replica holds for these keys',
        );
    }
    const body = this.#body(json);
    if (this.#lease) {
      try {
        this.#lease = await client.replace({
          ...body,
          metadata: { ...body.metadata, resourceVersion: this.#lease.metadata?.resourceVersion },
        });
        return;
      } catch (error) {
        // Deleted by the leader as stale (we could not renew for a while), or changed by someone
        // else: start again from what is there.
        if (!isKubeNotFound(error) && !isConflict(error)) throw error;
        this.#lease = undefined;
      }
    }
    try {
      this.#lease = await client.create(body);
    } catch (error) {
      if (!isConflict(error)) throw error;
      const current = await client.get(namespace, name);
      this.#lease = await client.replace({
        ...body,
        metadata: { ...body.metadata, resourceVersion: current.metadata?.resourceVersion },
      });
    }
  }

  #body(json: string): Lease {
    const { namespace, name, groupLabel, identity, durationMs } = this.#options;
    const now = microTime(this.#now());
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name,
        namespace,
        labels: { [REPLICA_REPORT_LABEL]: groupLabel },
        annotations: { [REPLICA_REPORT_ANNOTATION]: json },
      },
      spec: {
        holderIdentity: identity,
        leaseDurationSeconds: Math.max(1, Math.ceil(durationMs / 1000)),
        acquireTime: this.#lease?.spec?.acquireTime ?? now,
        renewTime: now,
      },
    };
  }

  async #delete(): Promise<void> {
    const { client, namespace, name } = this.#options;
    try {
      await client.delete(namespace, name);
    } catch (error) {
      if (!isKubeNotFound(error)) throw error;
    }
    this.#lease = undefined;
  }
}
