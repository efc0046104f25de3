import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';
import { newId } from '../../crypto/ids.js';
import type { SecretBox } from '../../crypto/secret-box.js';
import { rfc3339 } from '../../lib/rfc3339.js';
import type { EventDestinationTestResult, EventEnvelope } from '../../schemas/event-delivery.js';
import type { Db } from '../store/database.js';
import { nextBatch } from './batches.js';
import type { ChangeSignal } from './change-signal.js';
import { DeliveryMetrics } from './delivery-metrics.js';
import {
  clearBackoff,
  databaseNow,
  dropLeasesOfDeadProcesses,
  forgetDestination,
  leaseDueDestinations,
  pendingDeliveries,
  pruneEvents,
  recordSend,
  releaseLease,
  routeEvents,
  type SendOutcome,
} from './delivery-store.js';
import { recordOf } from './envelope.js';
import { openTarget } from './stored-target.js';
import {
  BatchTooLargeError,
  type DeliveryTarget,
  describeFailure,
  type OutboundRecord,
  type TargetEndpoints,
} from './targets/delivery-target.js';
import { type DeliveryTargetFactory, deliveryTargetFor } from './targets/index.js';

export interface EventDeliveryOptions {
  /** Every AWS service at this URL (`--aws-endpoint-url`): a local emulator, a VPC endpoint. */
  awsEndpointUrl?: string | undefined;
  /** Datadog's logs intake at this base URL (`--datadog-url`). */
  datadogUrl?: string | undefined;
  datadogDispatcher?: TargetEndpoints['datadogDispatcher'];
  /** Builds a destination's sender (tests put a fake here; default: the real target of its kind). */
  targetFactory?: DeliveryTargetFactory;
  /**
   * A send to a target that takes longer (every call it makes, STS included) is aborted, fails and
   * is retried (default 20 s).
   */
  requestTimeoutMs?: number;
  /** How often to look for work without being told of a change (default 1 s). */
  pollIntervalMs?: number;
  /** Backoff of a failing destination: full jitter over `initialMs * 2^(failures-1)`, capped (1 s, 5 min). */
  backoff?: { initialMs: number; maxMs: number };
  /** How long delivered events are kept (default 7 days). Undelivered ones are kept until delivered. */
  retentionMs?: number;
  /**
   * How long a dispatcher owns a destination it delivers to before another may take it (default
   * 60 s, renewed after every send; longer than a send can take, STS included).
   */
  leaseMs?: number;
  /** Destinations delivered to at once by this process (default 4). */
  concurrency?: number;
}

/** Events routed per round: small enough that a round never holds the database (or, on SQLite, the process) for long. */
const ROUTE_BATCH = 200;
/** A destination keeps its lease for this long at most before others get a turn. */
const TURN_MS = 2000;
const PRUNE_EVERY_MS = 60 * 60 * 1000;
/** How long a committed change waits for others before the dispatcher routes it. */
const COALESCE_MS = 20;
/** The first prune comes this long after start (plus jitter), so short-lived processes prune too. */
const FIRST_PRUNE_MS = 60 * 1000;

/**
 * Delivers the outbox to event destinations, at least once, in routing (commit) order per
 * destination. Each round routes newly committed events to the destinations of the subscriptions
 * that name their type, then starts a delivery turn for each destination that has work, is not
 * backing off and is not leased by another dispatcher (round robin, up to `concurrency` at once).
 * A turn sends the queue in batches as large as the target allows; what was sent is recorded only
 * after the target accepted it, so a crash in between sends it again (a duplicate), never loses it.
 * Several processes on one PostgreSQL database share the work: routing is serialized by an
 * advisory lock, each destination is leased to one of them at a time, and lease times come from
 * the database's clock.
 */
export class EventDispatcher {
  /** This process's name on leases. */
  readonly owner = newId('dsp');
  readonly metrics: DeliveryMetrics;
  readonly #endpoints: TargetEndpoints;
  readonly #options: Required<
    Omit<EventDeliveryOptions, 'awsEndpointUrl' | 'datadogUrl' | 'datadogDispatcher' | 'targetFactory'>
  >;
  readonly #targetFactory: DeliveryTargetFactory;
  /** One sender per destination, rebuilt when its sealed target changes; only its turn uses it. */
  readonly #targets = new Map<string, { sealed: string; target: DeliveryTarget }>();
  /** Delivery turns in progress, by destination. */
  readonly #active = new Map<string, Promise<void>>();
  #running: Promise<void> | undefined;
  #pruning: Promise<number> | undefined;
  #stopped = false;
  #wake: (() => void) | undefined;
  #pruneTimers: NodeJS.Timeout[] = [];
  #coalescing: NodeJS.Timeout | undefined;
  /**
   * A committed change wakes the loop a moment later, not at once: the commits of that moment are
   * then routed in one round and sent in one call, instead of a round and a call each.
   */
  readonly #onChange = () => {
    this.#coalescing ??= setTimeout(() => {
      this.#coalescing = undefined;
      this.#wake?.();
    }, COALESCE_MS);
  };

  constructor(
    private readonly db: Db,
    private readonly secretBox: SecretBox,
    private readonly changes: ChangeSignal,
    private readonly log: FastifyBaseLogger,
    registry: Registry,
    options: EventDeliveryOptions = {},
  ) {
    this.metrics = new DeliveryMetrics(registry, db);
    this.#options = {
      requestTimeoutMs: options.requestTimeoutMs ?? 20_000,
      pollIntervalMs: options.pollIntervalMs ?? 1000,
      backoff: options.backoff ?? { initialMs: 1000, maxMs: 5 * 60 * 1000 },
      retentionMs: options.retentionMs ?? 7 * 24 * 3600 * 1000,
      leaseMs: options.leaseMs ?? 60_000,
      concurrency: options.concurrency ?? 4,
    };
    // A lease must outlive the longest send and the bookkeeping around it, or two could overlap.
    if (this.#options.leaseMs < 2 * this.#options.requestTimeoutMs) {
      throw new Error(
        `event delivery: the lease (${this.#options.leaseMs} ms) must be at least twice the send timeout (${this.#options.requestTimeoutMs} ms)`,
      );
    }
    this.#targetFactory = options.targetFactory ?? deliveryTargetFor;
    this.#endpoints = {
      awsEndpointUrl: options.awsEndpointUrl,
      datadogUrl: options.datadogUrl,
      datadogDispatcher: options.datadogDispatcher,
      requestTimeoutMs: this.#options.requestTimeoutMs,
    };
  }

  start(): void {
    if (this.#running) return;
    this.changes.on('changed', this.#onChange);
    this.#running = dropLeasesOfDeadProcesses(this.db).then(
      () => this.#loop(),
      (err: unknown) => {
        this.log.error({ err }, 'event delivery could not start');
      },
    );
    const prune = () => void this.prune();
    const first = setTimeout(prune, FIRST_PRUNE_MS + Math.random() * FIRST_PRUNE_MS);
    const every = setInterval(prune, PRUNE_EVERY_MS);
    this.#pruneTimers = [first, every];
    for (const timer of this.#pruneTimers) timer.unref();
  }

  /** Finishes the sends in flight (their outcome is recorded) and a prune in progress, then stops. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.changes.off('changed', this.#onChange);
    for (const timer of this.#pruneTimers) clearTimeout(timer);
    clearTimeout(this.#coalescing);
    this.#wake?.();
    await this.#running;
    await this.#pruning;
    for (const { target } of this.#targets.values()) target.close();
    this.#targets.clear();
  }

  /** Drops delivered events older than the retention period; returns how many went. One at a time. */
  prune(now: number = Date.now()): Promise<number> {
    if (this.#pruning) return this.#pruning;
    const before = rfc3339(new Date(now - this.#options.retentionMs));
    this.#pruning = pruneEvents(this.db, before)
      .then(
        (removed) => {
          if (removed > 0) this.log.info({ removed }, 'pruned delivered events past their retention');
          return removed;
        },
        (err: unknown) => {
          this.log.error({ err }, 'pruning delivered events failed');
          return 0;
        },
      )
      .finally(() => {
        this.#pruning = undefined;
      });
    return this.#pruning;
  }

  /**
   * Sends one verification event straight to a destination's target, outside its queue, with a
   * sender of its own (a delivery turn may be using the cached one), and says whether the target
   * took it. A success also ends the destination's backoff, so a fixed credential is used at once.
   */
  async sendTest(
    destination: { id: string; target_sealed: string },
    event: EventEnvelope,
  ): Promise<EventDestinationTestResult> {
    const started = Date.now();
    let error: string | null = null;
    let target: DeliveryTarget | undefined;
    try {
      target = await this.#newTarget(destination);
      const record = {
        deliveryId: event.id,
        partitionKey: destination.id,
        timestampMs: started,
        body: JSON.stringify(event),
      };
      const [result] = await target.send([record], AbortSignal.timeout(this.#options.requestTimeoutMs));
      if (result && !result.accepted) error = result.error;
    } catch (cause) {
      error = describeFailure(cause);
    } finally {
      target?.close();
    }
    if (error === null) await clearBackoff(this.db, destination.id);
    this.log.info({ destinationId: destination.id, delivered: error === null, error }, 'test event sent');
    return { delivered: error === null, error, duration_ms: Date.now() - started, event };
  }

  async #loop(): Promise<void> {
    while (!this.#stopped) {
      let busy = false;
      try {
        busy = await this.#round();
      } catch (err) {
        this.log.error({ err }, 'event delivery round failed; trying again');
      }
      // better-sqlite3 answers synchronously: without this a busy loop would starve requests.
      await yieldToEventLoop();
      if (!busy && !this.#stopped) await this.#idle(this.#options.pollIntervalMs);
    }
    await Promise.all(this.#active.values());
  }

  /** Waits until a change is committed, a turn ends, `stop` is called, or `ms` pass. */
  #idle(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = () => {
        this.#wake = undefined;
        done();
      };
    });
  }

  /**
   * One round: route what was committed, and start turns for destinations that have work, up to
   * the concurrency, without waiting for them: routing goes on while they send, and a turn picks
   * up what was routed meanwhile.
   */
  async #round(): Promise<boolean> {
    const routed = await routeEvents(this.db, ROUTE_BATCH);
    const free = this.#options.concurrency - this.#active.size;
    if (free <= 0) return routed === ROUTE_BATCH;
    const now = await databaseNow(this.db);
    const active = new Set(this.#active.keys());
    const leased = await leaseDueDestinations(this.db, this.owner, this.#options.leaseMs, free, now, active);
    for (const destinationId of leased) {
      const turn: Promise<void> = this.#deliverTo(destinationId).finally(() => {
        if (this.#active.get(destinationId) === turn) this.#active.delete(destinationId);
        this.#wake?.();
      });
      this.#active.set(destinationId, turn);
    }
    // What was routed here has been offered to the turns already; come back at once only if more
    // waits to be routed or a turn started (there may be more to lease). Otherwise the next commit
    // (coalesced), the end of a turn or the poll interval wakes the loop.
    return routed === ROUTE_BATCH || leased.length > 0;
  }

  async #newTarget(destination: { id: string; target_sealed: string }): Promise<DeliveryTarget> {
    return await this.#targetFactory(
      openTarget(this.secretBox, destination.id, destination.target_sealed),
      this.#endpoints,
      destination.id,
    );
  }

  async #targetFor(destination: { id: string; target_sealed: string }): Promise<DeliveryTarget> {
    const cached = this.#targets.get(destination.id);
    if (cached?.sealed === destination.target_sealed) return cached.target;
    cached?.target.close();
    // Only this destination's turn builds its sender, so no other build can race this one.
    const target = await this.#newTarget(destination);
    this.#targets.set(destination.id, { sealed: destination.target_sealed, target });
    return target;
  }

  #forgetTarget(destinationId: string): void {
    this.#targets.get(destinationId)?.target.close();
    this.#targets.delete(destinationId);
  }

  /** Sends a leased destination its queue, batch after batch, for one turn; then gives the lease back. */
  async #deliverTo(destinationId: string): Promise<void> {
    let kind = 'unknown';
    try {
      const destination = await this.db
        .selectFrom('event_destinations')
        .select(['id', 'target_sealed'])
        .where('id', '=', destinationId)
        .executeTakeFirst();
      if (!destination) {
        // Deleted: the events still waiting for it go with it.
        const dropped = await forgetDestination(this.db, destinationId);
        this.#forgetTarget(destinationId);
        this.metrics.dropped.inc({ destination_id: destinationId }, dropped);
        if (dropped > 0)
          this.log.info({ destinationId, dropped }, 'dropped the queue of a deleted event destination');
        return;
      }
      const target = await this.#targetFor(destination);
      kind = target.kind;
      const turnEnds = Date.now() + TURN_MS;
      while (!this.#stopped && Date.now() < turnEnds) {
        const queue = await pendingDeliveries(
          this.db,
          destinationId,
          target.limits.maxRecords,
          2 * target.limits.maxBatchBytes,
        );
        if (queue.length === 0) return;
        const outcome = await this.#send(destinationId, target, queue.map(recordOf));
        const stillOurs = await this.#record(destinationId, outcome);
        if (!stillOurs || outcome.error !== undefined) return;
      }
    } catch (err) {
      // Whatever failed (a target that cannot be opened, the database), the destination backs off
      // instead of being picked again at once.
      this.log.error({ err, destinationId }, 'delivering to an event destination failed');
      this.metrics.failedSends.inc({ destination_id: destinationId, target: kind });
      await this.#record(destinationId, {
        delivered: [],
        undeliverable: [],
        retry: [],
        error: describeFailure(err),
      }).catch((recordErr: unknown) =>
        this.log.error({ err: recordErr, destinationId }, 'recording a delivery failure failed'),
      );
    } finally {
      await releaseLease(this.db, destinationId, this.owner).catch((err: unknown) =>
        this.log.warn({ err, destinationId }, 'releasing a delivery lease failed; it expires by itself'),
      );
    }
  }

  async #record(destinationId: string, outcome: SendOutcome): Promise<boolean> {
    return recordSend(this.db, destinationId, this.owner, outcome, {
      now: await databaseNow(this.db),
      leaseMs: this.#options.leaseMs,
      backoffMs: (failures) => this.#backoffMs(failures),
    });
  }

  /** One call to the target (halved while it answers that the call is too large). */
  async #send(destinationId: string, target: DeliveryTarget, queue: OutboundRecord[]): Promise<SendOutcome> {
    const labels = { destination_id: destinationId, target: target.kind };
    let { batch, oversize } = nextBatch(queue, target);
    const outcome: SendOutcome = {
      delivered: [],
      undeliverable: oversize.map(({ record, bytes }) => ({
        deliveryId: record.deliveryId,
        error: `the event takes ${bytes} bytes; ${target.kind} takes at most ${target.limits.maxRecordBytes}`,
      })),
      retry: [],
    };
    this.metrics.undeliverable.inc(labels, oversize.length);
    while (batch.length > 0) {
      try {
        const results = await target.send(batch, AbortSignal.timeout(this.#options.requestTimeoutMs));
        const now = Date.now();
        batch.forEach((record, index) => {
          const result = results[index];
          if (result?.accepted) {
            outcome.delivered.push(record.deliveryId);
            this.metrics.latency.observe(
              { target: target.kind },
              Math.max(0, now - record.timestampMs) / 1000,
            );
          } else if (result?.permanent) {
            outcome.undeliverable.push({ deliveryId: record.deliveryId, error: result.error });
            this.metrics.undeliverable.inc(labels);
          } else {
            outcome.retry.push(record.deliveryId);
            outcome.error ??= result?.error ?? 'the target gave no result for the record';
          }
        });
        break;
      } catch (cause) {
        if (cause instanceof BatchTooLargeError && batch.length > 1) {
          batch = batch.slice(0, Math.ceil(batch.length / 2));
          continue;
        }
        if (cause instanceof BatchTooLargeError) {
          outcome.undeliverable.push({
            deliveryId: batch[0]?.deliveryId ?? '',
            error: describeFailure(cause),
          });
          this.metrics.undeliverable.inc(labels);
          break;
        }
        outcome.retry = batch.map((record) => record.deliveryId);
        outcome.error = describeFailure(cause);
        break;
      }
    }
    this.metrics.delivered.inc(labels, outcome.delivered.length);
    if (outcome.error !== undefined) {
      this.metrics.failedSends.inc(labels);
      this.log.warn(
        { destinationId, target: target.kind, retrying: outcome.retry.length, error: outcome.error },
        'event delivery failed; retrying with backoff',
      );
    }
    return outcome;
  }

  /** Jitter over the capped exponential step: uniformly between a tenth of it and all of it. */
  #backoffMs(failures: number): number {
    const { initialMs, maxMs } = this.#options.backoff;
    const step = Math.min(maxMs, initialMs * 2 ** Math.min(30, failures - 1));
    return Math.round(step * (0.1 + 0.9 * Math.random()));
  }
}
