import type { FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';
import type { EventDestinationTestResult, EventEnvelope } from '../../schemas/event-delivery.js';
import { newId } from '../crypto/ids.js';
import type { SecretBox } from '../crypto/secret-box.js';
import type { Db } from '../store/database.js';
import { rfc3339 } from '../time/rfc3339.js';
import { nextBatch } from './batches.js';
import type { ChangeSignal } from './change-signal.js';
import { DeliveryMetrics } from './delivery-metrics.js';
import {
  clearBackoff,
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
import { type DeliveryTarget, describeFailure, type TargetEndpoints } from './targets/delivery-target.js';
import { deliveryTargetFor } from './targets/index.js';

export interface EventDeliveryOptions {
  /** Every AWS service at this URL (`--aws-endpoint-url`): a local emulator, a VPC endpoint. */
  awsEndpointUrl?: string | undefined;
  /** Datadog's logs intake at this base URL (`--datadog-url`). */
  datadogUrl?: string | undefined;
  datadogDispatcher?: TargetEndpoints['datadogDispatcher'];
  /** A call to a target that takes longer fails and is retried (default 20 s). */
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

/** Events routed per round. */
const ROUTE_BATCH = 500;
/** A destination keeps its lease for this long at most before others get a turn. */
const TURN_MS = 2000;
const PRUNE_EVERY_MS = 60 * 60 * 1000;

/**
 * Delivers the outbox to event destinations, at least once, in routing (commit) order per
 * destination. Each round routes new events to the destinations of the subscriptions that name
 * their type, leases the destinations that have work and are not backing off, and sends each its
 * queue in batches as large as its target allows. What was sent is recorded after the target
 * accepted it, so a crash in between sends it again (counted as a duplicate), never loses it.
 * Several processes on one PostgreSQL database share the work: routing is serialized by an
 * advisory lock, and each destination is leased to one of them at a time.
 */
export class EventDispatcher {
  /** This process's name on leases. */
  readonly owner = newId('dsp');
  readonly metrics: DeliveryMetrics;
  readonly #endpoints: TargetEndpoints;
  readonly #options: Required<
    Omit<EventDeliveryOptions, 'awsEndpointUrl' | 'datadogUrl' | 'datadogDispatcher'>
  >;
  readonly #targets = new Map<string, { sealed: string; target: DeliveryTarget }>();
  /** Delivery turns in progress, by destination. */
  readonly #active = new Map<string, Promise<void>>();
  #running: Promise<void> | undefined;
  #stopped = false;
  #wake: (() => void) | undefined;
  #pruneTimer: NodeJS.Timeout | undefined;
  readonly #onChange = () => this.#wake?.();

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
    this.#pruneTimer = setInterval(() => void this.prune(), PRUNE_EVERY_MS);
    this.#pruneTimer.unref();
  }

  /** Finishes the send in flight (its outcome is recorded), then stops. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.changes.off('changed', this.#onChange);
    clearInterval(this.#pruneTimer);
    this.#wake?.();
    await this.#running;
    for (const { target } of this.#targets.values()) target.close();
    this.#targets.clear();
  }

  /** Drops delivered events older than the retention period; returns how many went. */
  async prune(now: number = Date.now()): Promise<number> {
    try {
      const removed = await pruneEvents(this.db, rfc3339(new Date(now - this.#options.retentionMs)));
      if (removed > 0) this.log.info({ removed }, 'pruned delivered events past their retention');
      return removed;
    } catch (err) {
      this.log.error({ err }, 'pruning delivered events failed');
      return 0;
    }
  }

  /**
   * Sends one verification event straight to a destination's target, outside its queue, and says
   * whether the target took it. A success also ends the destination's backoff, so a fixed
   * credential is used at once.
   */
  async sendTest(
    destination: { id: string; target_sealed: string },
    event: EventEnvelope,
  ): Promise<EventDestinationTestResult> {
    const started = Date.now();
    let error: string | null = null;
    try {
      const target = this.#targetFor(destination);
      const [result] = await target.send([
        {
          deliveryId: event.id,
          partitionKey: destination.id,
          timestampMs: started,
          body: JSON.stringify(event),
        },
      ]);
      if (result && !result.accepted) error = result.error;
    } catch (cause) {
      error = describeFailure(cause);
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
      if (!busy && !this.#stopped) await this.#idle(this.#options.pollIntervalMs);
    }
    await Promise.all(this.#active.values());
  }

  /** Waits until a change is committed, `stop` is called, or `ms` pass. */
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
   * One round: route what was committed, and start delivering to destinations that have work, up
   * to the concurrency, without waiting for them: routing goes on while they send, and a delivery
   * turn picks up what was routed meanwhile. True when it did anything (the next round comes at
   * once); otherwise the loop idles until a change, a finished turn, or the poll interval.
   */
  async #round(): Promise<boolean> {
    const routed = await routeEvents(this.db, ROUTE_BATCH);
    const free = this.#options.concurrency - this.#active.size;
    const leased =
      free > 0 ? await leaseDueDestinations(this.db, this.owner, this.#options.leaseMs, free) : [];
    for (const destinationId of leased) {
      const turn = this.#deliverTo(destinationId).finally(() => {
        this.#active.delete(destinationId);
        this.#wake?.();
      });
      this.#active.set(destinationId, turn);
    }
    return routed > 0 || leased.length > 0;
  }

  #targetFor(destination: { id: string; target_sealed: string }): DeliveryTarget {
    const cached = this.#targets.get(destination.id);
    if (cached?.sealed === destination.target_sealed) return cached.target;
    cached?.target.close();
    const target = deliveryTargetFor(
      openTarget(this.secretBox, destination.id, destination.target_sealed),
      this.#endpoints,
      destination.id,
    );
    this.#targets.set(destination.id, { sealed: destination.target_sealed, target });
    return target;
  }

  /** Sends a leased destination its queue, batch after batch, for one turn; then gives the lease back. */
  async #deliverTo(destinationId: string): Promise<void> {
    try {
      const destination = await this.db
        .selectFrom('event_destinations')
        .select(['id', 'target_sealed'])
        .where('id', '=', destinationId)
        .executeTakeFirst();
      if (!destination) {
        // Deleted between routing and now (the delete route forgets its queue too; this covers a race).
        const dropped = await forgetDestination(this.db, destinationId);
        this.#targets.get(destinationId)?.target.close();
        this.#targets.delete(destinationId);
        this.metrics.dropped.inc({ destination_id: destinationId }, dropped);
        return;
      }
      const target = this.#targetFor(destination);
      const turnEnds = Date.now() + TURN_MS;
      while (!this.#stopped && Date.now() < turnEnds) {
        const queue = await pendingDeliveries(this.db, destinationId, target.limits.maxRecords);
        if (queue.length === 0) return;
        const outcome = await this.#send(destinationId, target, queue.map(recordOf));
        await recordSend(this.db, destinationId, this.owner, outcome, {
          now: Date.now(),
          leaseMs: this.#options.leaseMs,
          backoffMs: (failures) => this.#backoffMs(failures),
        });
        if (outcome.retry.length > 0) return;
      }
    } catch (err) {
      this.log.error({ err, destinationId }, 'delivering to an event destination failed');
    } finally {
      await releaseLease(this.db, destinationId, this.owner).catch((err: unknown) =>
        this.log.warn({ err, destinationId }, 'releasing a delivery lease failed; it expires by itself'),
      );
    }
  }

  async #send(
    destinationId: string,
    target: DeliveryTarget,
    queue: ReturnType<typeof recordOf>[],
  ): Promise<SendOutcome> {
    const labels = { destination_id: destinationId, target: target.kind };
    const { batch, oversize } = nextBatch(queue, target.limits);
    const outcome: SendOutcome = {
      delivered: [],
      undeliverable: oversize.map(({ record, bytes }) => ({
        deliveryId: record.deliveryId,
        error: `the event is ${bytes} bytes; ${target.kind} takes at most ${target.limits.maxRecordBytes}`,
      })),
      retry: [],
    };
    this.metrics.undeliverable.inc(labels, oversize.length);
    if (batch.length === 0) return outcome;
    try {
      const results = await target.send(batch);
      const now = Date.now();
      batch.forEach((record, index) => {
        const result = results[index];
        if (result?.accepted) {
          outcome.delivered.push(record.deliveryId);
          this.metrics.latency.observe({ target: target.kind }, Math.max(0, now - record.timestampMs) / 1000);
        } else if (result?.permanent) {
          outcome.undeliverable.push({ deliveryId: record.deliveryId, error: result.error });
          this.metrics.undeliverable.inc(labels);
        } else {
          outcome.retry.push(record.deliveryId);
          outcome.error ??= result?.error ?? 'the target gave no result for the record';
        }
      });
    } catch (cause) {
      outcome.retry = batch.map((record) => record.deliveryId);
      outcome.error = describeFailure(cause);
    }
    this.metrics.delivered.inc(labels, outcome.delivered.length);
    if (outcome.retry.length > 0) {
      this.metrics.failedSends.inc(labels);
      this.log.warn(
        { destinationId, target: target.kind, retrying: outcome.retry.length, error: outcome.error },
        'event delivery failed; retrying with backoff',
      );
    }
    return outcome;
  }

  /** Full jitter: uniformly up to the capped exponential step, never under a tenth of it. */
  #backoffMs(failures: number): number {
    const { initialMs, maxMs } = this.#options.backoff;
    const step = Math.min(maxMs, initialMs * 2 ** Math.min(30, failures - 1));
    return Math.round(step * (0.1 + 0.9 * Math.random()));
  }
}
