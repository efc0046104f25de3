import { type Kysely, type Migration, PostgresAdapter } from 'kysely';
import { idColumnType } from './column-types.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against the schema as it was, not today's types
type AnyDb = Kysely<any>;

/**
 * Delivery of the outbox. An event is routed once (`routed_at`): one delivery row per destination
 * of every subscription whose sources name its type, numbered in routing order (`seq`), which is
 * the order the destination receives them. Each destination has one state row: its retry
 * schedule, health, and the lease of the replica delivering to it.
 */
export const eventDelivery: Migration = {
  async up(db: AnyDb) {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // `delivered_at` was a placeholder before delivery existed; deliveries are tracked per destination now.
    await db.schema.dropIndex('events_undelivered').execute();
    await db.schema.alterTable('events').dropColumn('delivered_at').execute();
    await db.schema.alterTable('events').addColumn('routed_at', 'text').execute();
    // Events recorded before delivery existed were never promised to anyone: they are not sent.
    await db.updateTable('events').set({ routed_at: new Date().toISOString() }).execute();
    if (postgres) {
      // Routing order on PostgreSQL: drawn from the database when the event is inserted, after the
      // change's row locks are held, so two changes of one resource through two replicas keep
      // their order whatever the replicas' clocks say. (SQLite routes by rowid: one process.)
      await db.schema.alterTable('events').addColumn('seq', 'bigserial').execute();
      await db.schema.createIndex('events_routing').on('events').columns(['routed_at', 'seq']).execute();
    } else {
      await db.schema.createIndex('events_routing').on('events').columns(['routed_at']).execute();
    }

    await db.schema
      .createTable('event_deliveries')
      .addColumn('seq', postgres ? 'bigserial' : 'integer', (c) =>
        postgres ? c.primaryKey() : c.primaryKey().autoIncrement(),
      )
      .addColumn('id', idColumnType(db), (c) => c.notNull().unique())
      .addColumn('event_id', idColumnType(db), (c) => c.notNull())
      .addColumn('destination_id', idColumnType(db), (c) => c.notNull())
      // pending | delivered | undeliverable
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('last_error', 'text')
      .addColumn('delivered_at', 'text')
      .execute();
    await db.schema
      .createIndex('event_deliveries_once')
      .on('event_deliveries')
      .columns(['event_id', 'destination_id'])
      .unique()
      .execute();
    await db.schema
      .createIndex('event_deliveries_queue')
      .on('event_deliveries')
      .columns(['destination_id', 'state', 'seq'])
      .execute();
    await db.schema
      .createIndex('event_deliveries_state')
      .on('event_deliveries')
      .columns(['state', 'destination_id'])
      .execute();

    await db.schema
      .createTable('event_destination_delivery')
      .addColumn('destination_id', idColumnType(db), (c) => c.primaryKey())
      .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
      // Scheduling times are ISO 8601 with milliseconds, fixed width, so text comparison orders them.
      .addColumn('next_attempt_at', 'text')
      .addColumn('last_success_at', 'text')
      .addColumn('last_error', 'text')
      .addColumn('last_error_at', 'text')
      .addColumn('delivered_total', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('lease_owner', 'text')
      .addColumn('lease_expires_at', 'text')
      // When it last got a turn: turns go round, so no destination waits behind busier ones.
      .addColumn('last_turn_at', 'text')
      .execute();
  },
};
