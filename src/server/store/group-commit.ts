import { sql } from 'kysely';
import type { Db } from './database.js';
import type { LogSync } from './wal-sync.js';

/** Enough to turn a burst into a few commits; bounded so no request waits behind a long batch. */
const MAX_BATCH = 64;

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

interface Pending {
  work: (trx: Db) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for SQLite, whose `synchronous=FULL` commit waits for the disk (an fsync of the
 * WAL, milliseconds) and whose one writer runs write transactions one at a time. Write requests
 * that arrive while a commit is under way queue up and then run, one after another, in one
 * transaction, each inside its own SAVEPOINT: a request that fails rolls back only its own writes.
 * One COMMIT makes them all durable, and only then is any of them answered, so "acknowledged
 * means on disk" holds while a burst of N writes costs one fsync instead of N.
 *
 * Requests of a batch see the writes of those before them, exactly as if they had committed one
 * after another; if the COMMIT itself fails, every request of the batch gets that error (none of
 * them was acknowledged).
 */
export class GroupCommitter {
  readonly #db: Db;
  #queue: Pending[] = [];
  #running = false;

  readonly #walSync: LogSync | undefined;

  /**
   * With `walSync`, the COMMIT runs with `synchronous=NORMAL` and the log is fsynced off the event
   * loop before anyone is answered (see `WalSync`); without it, SQLite's own `synchronous=FULL`.
   */
  constructor(db: Db, walSync?: LogSync) {
    this.#db = db;
    this.#walSync = walSync;
  }

  run<T>(work: (trx: Db) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#running) {
        this.#running = true;
        // After the I/O callbacks of this turn: the requests that arrived with this one join it.
        setImmediate(() => this.#drain());
      }
    });
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0, MAX_BATCH);
      await this.#commit(batch);
    }
    this.#running = false;
  }

  async #commit(batch: Pending[]): Promise<void> {
    const outcomes: Outcome[] = [];
    try {
      await this.#db.connection().execute(async (connection) => {
        // The connection is this batch's alone until the callback ends, so no other transaction
        // (event delivery, the edge feed) ever commits while synchronous is NORMAL.
        if (this.#walSync) await sql`PRAGMA synchronous = NORMAL`.execute(connection);
        try {
          await inTransaction(connection, async () => {
            if (batch.length === 1) {
              // Alone: no savepoint needed; a failure rolls back the whole (one-request) transaction.
              outcomes.push({ ok: true, value: await (batch[0] as Pending).work(connection) });
              return;
            }
            for (const pending of batch) outcomes.push(await inSavepoint(connection, pending.work));
          });
        } finally {
          if (this.#walSync) await sql`PRAGMA synchronous = FULL`.execute(connection);
        }
      });
      // Committed but maybe only in the page cache: nobody is answered before the log is on disk.
      await this.#walSync?.sync();
    } catch (error) {
      // The transaction as a whole failed (a lone request's own error, the COMMIT or the fsync):
      // nothing of the batch was acknowledged, so every request of it fails.
      for (const pending of batch) pending.reject(error);
      return;
    }
    batch.forEach((pending, index) => {
      const outcome = outcomes[index];
      if (outcome?.ok) pending.resolve(outcome.value);
      else pending.reject(outcome?.error);
    });
  }
}

/** BEGIN, `work`, COMMIT; ROLLBACK if `work` or the COMMIT fails. */
async function inTransaction(connection: Db, work: () => Promise<void>): Promise<void> {
  await sql`BEGIN`.execute(connection);
  try {
    await work();
    await sql`COMMIT`.execute(connection);
  } catch (error) {
    try {
      await sql`ROLLBACK`.execute(connection);
    } catch (rollbackError) {
      // SQLite may have rolled back already (a failed COMMIT): the first error is what happened.
      throw new Error('write transaction failed, and so did its ROLLBACK', { cause: [error, rollbackError] });
    }
    throw error;
  }
}

/** One request of a batch, in its own SAVEPOINT: its failure rolls back its writes alone. */
async function inSavepoint(connection: Db, work: (trx: Db) => Promise<unknown>): Promise<Outcome> {
  await sql`SAVEPOINT edgeward_request`.execute(connection);
  try {
    const value = await work(connection);
    await sql`RELEASE edgeward_request`.execute(connection);
    return { ok: true, value };
  } catch (error) {
    await sql`ROLLBACK TO edgeward_request`.execute(connection);
    await sql`RELEASE edgeward_request`.execute(connection);
    return { ok: false, error };
  }
}
