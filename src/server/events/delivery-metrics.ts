import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Db } from '../store/database.js';
import { backlogs } from './delivery-store.js';

/**
 * Prometheus metrics of event delivery. Labels are destination ids and target kinds, never ARNs,
 * keys or payloads. The backlog is read from the database when scraped, so every replica reports
 * the whole account's backlog, not only what it happens to be delivering.
 */
export class DeliveryMetrics {
  readonly delivered: Counter<'destination_id' | 'target'>;
  readonly failedSends: Counter<'destination_id' | 'target'>;
  readonly undeliverable: Counter<'destination_id' | 'target'>;
  readonly dropped: Counter<'destination_id'>;
  readonly latency: Histogram<'target'>;

  constructor(registry: Registry, db: Db) {
    this.delivered = new Counter({
      name: 'edgeward_events_delivered_total',
      help: 'Events delivered to event destinations (by this process), by destination and target kind',
      labelNames: ['destination_id', 'target'],
      registers: [registry],
    });
    this.failedSends = new Counter({
      name: 'edgeward_events_delivery_failures_total',
      help: 'Sends to event destinations that failed and will be retried, by destination and target kind',
      labelNames: ['destination_id', 'target'],
      registers: [registry],
    });
    this.undeliverable = new Counter({
      name: 'edgeward_events_undeliverable_total',
      help: 'Events a destination can never accept (larger than its record limit), kept and not retried',
      labelNames: ['destination_id', 'target'],
      registers: [registry],
    });
    this.dropped = new Counter({
      name: 'edgeward_events_dropped_total',
      help: 'Events still waiting for a destination when the destination was deleted',
      labelNames: ['destination_id'],
      registers: [registry],
    });
    this.latency = new Histogram({
      name: 'edgeward_events_delivery_latency_seconds',
      help: 'Time from the commit of a change to the delivery of its event, by target kind',
      labelNames: ['target'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
      registers: [registry],
    });
    new Gauge({
      name: 'edgeward_events_backlog',
      help: 'Events waiting to be delivered, by destination (the whole account, read from the database)',
      labelNames: ['destination_id'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const [destinationId, count] of await backlogs(db))
          this.set({ destination_id: destinationId }, count);
      },
    });
    new Gauge({
      name: 'edgeward_events_unrouted',
      help: 'Committed events not yet matched to subscriptions (the outbox ahead of the dispatcher)',
      registers: [registry],
      async collect() {
        const row = await db
          .selectFrom('events')
          .select((eb) => eb.fn.countAll<string | number>().as('count'))
          .where('routed_at', 'is', null)
          .executeTakeFirst();
        this.set(Number(row?.count ?? 0));
      },
    });
  }
}
