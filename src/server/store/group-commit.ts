import { sql } from 'kysely';
import type { Db } from './database.js';
import type { LogSync } from './wal-sync.js';

/** What group commit needs of SQLite's writer to make its own COMMITs durable. */
export interface DurableWriter {
  /** fsync of the write-ahead log. */
  log: LogSync;
  /** Whether the writer connection is inside a transaction (after a failure: did SQLite end it?). */
  inTransaction(): boolean;
}

/** Enough to turn a burst into a few commits; bounded so no request waits behind a long batch. */
const MAX_BATCH = 64;

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

interface Pending {
  work: (trx: Db) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for SQLite, whose durable commit waits for the disk (an fsync of the WAL,
 * milliseconds) and whose one writer runs write transactions one at a time. Write requests that
 * arrive while a commit is under way queue up and then run, one after another, in one
 * transaction, each inside its own SAVEPOINT: a request that fails rolls back only its own writes.
 * One COMMIT and one fsync make them all durable, and only then is any of them answered, so
 * "acknowledged means on disk" holds while a burst of N writes costs one fsync instead of N.
 * Readers may see a batch during its fsync, before it is answered; nothing is answered before.
 *
 * Requests of a batch see the writes of those before them, exactly as if they had committed one
 * after another; if the COMMIT or the fsync fails, every request of the batch gets that error
 * (none of them was acknowledged).
 */
export class GroupCommitter {
  readonly #db: Db;
  #queue: Pending[] = [];
  #running = false;

  readonly #durable: DurableWriter | undefined;
  #broken: Error | undefined;

  /**
   * With `durable`, the COMMIT runs with `synchronous=NORMAL` and the log is fsynced off the event
   * loop before anyone is answered (see `WalSync`); without it, SQLite's own `synchronous=FULL`.
   */
  constructor(db: Db, durable?: DurableWriter) {
    this.#db = db;
    this.#durable = durable;
  }

  /**
   * Set when the writer can no longer promise durability: an fsync of the log failed (Linux may
   * have dropped the pages it could not write and would report success next time), or the
   * connection could not be put back to FULL or out of a failed transaction. Every later write
   * is refused with it until the server restarts and SQLite recovers from what is on disk.
   */
  get broken(): Error | undefined {
    return this.#broken;
  }

  run<T>(work: (trx: Db) => Promise<T>): Promise<T> {
    if (this.#broken) return Promise.reject(this.#broken);
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
    if (this.#broken) {
      for (const pending of batch) pending.reject(this.#broken);
      return;
    }
    const outcomes: Outcome[] = [];
    try {
      await this.#db.connection().execute((connection) => this.#transaction(connection, batch, outcomes));
    } catch (error) {
      // The transaction as a whole failed (a lone request's own error, or the COMMIT): nothing of
      // the batch was committed, so every request of it fails.
      for (const pending of batch) pending.reject(error);
      return;
    }
    try {
      // Committed and visible to readers, but maybe only in the page cache: nobody is answered
      // before the log is on disk.
      await this.#durable?.log.sync();
    } catch (error) {
      this.#broken = new Error(
        'the write-ahead log could not be fsynced: writes are refused until a restart',
        {
          cause: error,
        },
      );
      for (const pending of batch) pending.reject(this.#broken);
      return;
    }
    batch.forEach((pending, index) => {
      const outcome = outcomes[index];
      if (outcome?.ok) pending.resolve(outcome.value);
      else pending.reject(outcome?.error);
    });
  }

  /**
   * The batch's transaction on a connection that is its alone until it returns, so no other
   * transaction (event delivery, the edge feed) ever commits while synchronous is NORMAL.
   */
  async #transaction(connection: Db, batch: Pending[], outcomes: Outcome[]): Promise<void> {
    const durable = this.#durable;
    if (durable) await sql`PRAGMA synchronous = NORMAL`.execute(connection);
    await sql`BEGIN`.execute(connection);
    try {
      if (batch.length === 1) {
        // Alone: no savepoint needed; a failure rolls back the whole (one-request) transaction.
        outcomes.push({ ok: true, value: await (batch[0] as Pending).work(connection) });
      } else {
        for (const pending of batch) outcomes.push(await inSavepoint(connection, pending.work));
      }
      await sql`COMMIT`.execute(connection);
    } catch (error) {
      // SQLite ends the transaction itself after some failures (a failed COMMIT may or may not).
      if (!durable || durable.inTransaction()) await this.#orBreak(sql`ROLLBACK`.execute(connection));
      throw error;
    } finally {
      if (durable) await this.#orBreak(sql`PRAGMA synchronous = FULL`.execute(connection));
    }
  }

  /** Runs a statement that puts the connection back in order; if it fails, the writer is broken. */
  async #orBreak(statement: Promise<unknown>): Promise<void> {
    try {
      await statement;
    } catch (error) {
      this.#broken = new Error('the SQLite writer could not be restored after a transaction', {
        cause: error,
      });
      throw this.#broken;
    }
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
