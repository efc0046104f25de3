import { EventEmitter } from 'node:events';
import { PostgresAdapter, sql } from 'kysely';
import type pg from 'pg';
import type { Db } from '../store/database.js';
import { loadPg } from '../store/pg-loader.js';

/** The PostgreSQL channel on which every replica announces a committed change. */
const CHANNEL = 'edgeward_changes';
/** The channel on which a replica announces that an API key may no longer authenticate as before. */
const PRINCIPALS_CHANNEL = 'edgeward_principals';
/** Channels of messages between replicas (agent commands and their results), with a JSON payload. */
export const REPLICA_CHANNELS = ['edgeward_commands', 'edgeward_command_results'] as const;
export type ReplicaChannel = (typeof REPLICA_CHANNELS)[number];
const RELISTEN_DELAY_MS = 1000;

/**
 * "Something in the account changed": what the edge feed waits on to push a new configuration.
 * A write route calls `inTransaction` (on PostgreSQL a NOTIFY, which PostgreSQL delivers to every
 * replica's LISTEN only if the transaction commits) and `committed` after its commit, for this
 * process. Listeners receive no payload: they re-read what they need.
 */
export class ChangeSignal extends EventEmitter<{
  changed: [];
  message: [channel: ReplicaChannel, payload: string];
  /** A key was revoked or its owner changed, here or (on PostgreSQL) on another replica. */
  principalsChanged: [];
  /** Whether this replica hears the others now (PostgreSQL only): false from a dropped LISTEN until it is back. */
  hearing: [boolean];
  error: [Error];
}> {
  #listener: pg.Client | undefined;
  #closed = false;

  /** Whether other replicas can be told anything (PostgreSQL, listening). */
  get shared(): boolean {
    return this.#listener !== undefined;
  }

  /** Sends `payload` to every replica listening (this one included), on PostgreSQL. */
  async publish(db: Db, channel: ReplicaChannel, payload: string): Promise<void> {
    await sql`SELECT pg_notify(${channel}, ${payload})`.execute(db);
  }

  /** Inside a write transaction: on PostgreSQL, tells the other replicas once it commits. */
  async inTransaction(db: Db): Promise<void> {
    if (db.getExecutor().adapter instanceof PostgresAdapter) await sql`NOTIFY edgeward_changes`.execute(db);
  }

  /** Inside a write transaction that revoked a key or changed its owner: see `principalsChanged`. */
  async principalsChangedInTransaction(db: Db): Promise<void> {
    if (db.getExecutor().adapter instanceof PostgresAdapter)
      await sql`NOTIFY edgeward_principals`.execute(db);
  }

  /** After such a transaction committed in this process (on PostgreSQL, the NOTIFY says it too). */
  principalsCommitted(): void {
    this.emit('principalsChanged');
  }

  /** After a write committed in this process. */
  committed(): void {
    this.emit('changed');
  }

  /** On PostgreSQL: hears the other replicas' changes, reconnecting when the connection drops. */
  async listen(databaseUrl: string): Promise<void> {
    if (this.#closed) return;
    const { Client } = await loadPg();
    if (this.#closed) return;
    const client = new Client({ connectionString: databaseUrl });
    const retry = (error: Error) => {
      if (this.#closed || this.#listener !== client) return;
      this.#listener = undefined;
      this.emit('hearing', false);
      client.end().catch(() => {}); // the connection is already broken; ending it is best effort
      this.emit('error', new Error('the change LISTEN connection failed; reconnecting', { cause: error }));
      // A change may have been missed while disconnected: say "changed" once reconnected.
      setTimeout(() => {
        this.listen(databaseUrl).then(
          () => this.emit('changed'),
          (cause: Error) => retry(cause),
        );
      }, RELISTEN_DELAY_MS).unref();
    };
    client.on('error', retry);
    client.on('notification', (message) => {
      if (message.channel === CHANNEL) this.emit('changed');
      if (message.channel === PRINCIPALS_CHANNEL) this.emit('principalsChanged');
      const channel = REPLICA_CHANNELS.find((name) => name === message.channel);
      if (channel && message.payload !== undefined) this.emit('message', channel, message.payload);
    });
    this.#listener = client;
    await client.connect();
    for (const name of [CHANNEL, PRINCIPALS_CHANNEL, ...REPLICA_CHANNELS])
      await client.query(`LISTEN ${name}`);
    this.emit('hearing', true);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const listener = this.#listener;
    this.#listener = undefined;
    await listener?.end();
  }
}
