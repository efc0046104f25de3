import { describeKubeError, isConflict, isKubeNotFound } from './kube-errors.js';
import type { Lease } from './leader-election.js';
import type { Logger } from './logger.js';
import { type ParsedReport, parseReport, type ReportEntries } from './replica-report-lease.js';
import type { KubeResources } from './resource-client.js';

export interface ReplicaReportsOptions {
  /** This replica's own report: never counted as a peer's. */
  ownName: string;
  /** Deletes stale reports (the leader's chore). */
  client: KubeResources<Lease>;
  namespace: string;
  isLeader: () => boolean;
  /** How often stale reports are looked for. Default 1 s. */
  sweepMs?: number;
  log: Logger;
  now?: () => number;
}

interface Peer {
  report: ParsedReport;
  /** When this replica last saw the report change, on its own clock (as leader election measures). */
  seenAt: number;
  stale: boolean;
  /** A failed delete is tried again only after this. */
  nextDeleteAt: number;
  deleting: boolean;
}

const NO_ENTRIES: ReportEntries = {};
/** After a failed delete of a stale report (no permission, the API away), wait this long. */
const DELETE_RETRY_MS = 30_000;

/**
 * The other replicas' reports, as the informer of report Leases brings them (`observe`, `forget`):
 * what each holds by key, while its report is fresh. A report not renewed within its duration is
 * stale: its entries stop counting at once, and the leader deletes it (a replica that was only
 * cut off writes a new one when it can). Listeners hear which keys' values changed: a peer's new
 * entries, a report gone or gone stale.
 */
export class ReplicaReports {
  readonly #options: ReplicaReportsOptions;
  readonly #now: () => number;
  readonly #peers = new Map<string, Peer>();
  readonly #listeners: Array<(keys: string[]) => void> = [];
  #sweeper: NodeJS.Timeout | undefined;

  constructor(options: ReplicaReportsOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** The values of `key` in every fresh report of another replica. */
  peerValues(key: string): string[] {
    const values: string[] = [];
    for (const peer of this.#peers.values()) {
      if (!peer.stale) values.push(...(peer.report.entries[key] ?? []));
    }
    return values;
  }

  /** Hears the keys whose peer values changed. */
  onChange(listener: (keys: string[]) => void): void {
    this.#listeners.push(listener);
  }

  /** A report Lease was listed, added or updated. */
  observe(lease: Lease): void {
    const name = lease.metadata?.name;
    if (!name || name === this.#options.ownName) return;
    const report = parseReport(lease);
    if (!report) {
      this.forget(lease);
      return;
    }
    const previous = this.#peers.get(name);
    const changed =
      !previous ||
      previous.report.renewTime !== report.renewTime ||
      previous.report.identity !== report.identity ||
      !sameEntries(previous.report.entries, report.entries);
    const peer: Peer = {
      report,
      seenAt: changed ? this.#now() : (previous?.seenAt ?? this.#now()),
      stale: changed ? false : (previous?.stale ?? false),
      nextDeleteAt: previous?.nextDeleteAt ?? 0,
      deleting: previous?.deleting ?? false,
    };
    this.#peers.set(name, peer);
    this.#notify(entriesOf(previous), entriesOf(peer));
  }

  /** A report Lease was deleted. */
  forget(lease: Lease): void {
    const name = lease.metadata?.name ?? '';
    const previous = this.#peers.get(name);
    if (!previous) return;
    this.#peers.delete(name);
    this.#notify(entriesOf(previous), NO_ENTRIES);
  }

  start(): void {
    if (this.#sweeper) return;
    this.#sweeper = setInterval(() => this.sweep(), this.#options.sweepMs ?? 1000);
    this.#sweeper.unref();
  }

  stop(): void {
    clearInterval(this.#sweeper);
    this.#sweeper = undefined;
  }

  /** Marks reports past their duration stale; the leader deletes stale ones. */
  sweep(): void {
    const now = this.#now();
    for (const [name, peer] of this.#peers) {
      if (!peer.stale && now > peer.seenAt + peer.report.durationMs) {
        peer.stale = true;
        this.#options.log.info(
          { lease: name, identity: peer.report.identity },
          'a replica report went stale: its entries no longer count',
        );
        this.#notify(peer.report.entries, NO_ENTRIES);
      }
      if (peer.stale && !peer.deleting && now >= peer.nextDeleteAt && this.#options.isLeader()) {
        void this.#delete(name, peer);
      }
    }
  }

  async #delete(name: string, peer: Peer): Promise<void> {
    peer.deleting = true;
    try {
      // Only the version seen stale: a report renewed meanwhile stays.
      await this.#options.client.delete(this.#options.namespace, name, {
        resourceVersion: peer.report.resourceVersion,
      });
    } catch (error) {
      if (!isKubeNotFound(error) && !isConflict(error)) {
        peer.nextDeleteAt = this.#now() + DELETE_RETRY_MS;
        this.#options.log.warn(
          { lease: name, error: describeKubeError(error) },
          'deleting a stale replica report failed',
        );
      }
    } finally {
      peer.deleting = false;
    }
  }

  #notify(before: ReportEntries, after: ReportEntries): void {
    const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
    const changed = [...keys].filter((key) => !sameValues(before[key], after[key]));
    if (changed.length === 0) return;
    for (const listener of this.#listeners) listener(changed);
  }
}

function entriesOf(peer: Peer | undefined): ReportEntries {
  return !peer || peer.stale ? NO_ENTRIES : peer.report.entries;
}

function sameValues(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  if (a === b) return true;
  if (!a || !b || a.length !== b.length) return false;
  return a.every((value, index) => value === b[index]);
}

function sameEntries(a: ReportEntries, b: ReportEntries): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => sameValues(a[key], b[key]));
}
