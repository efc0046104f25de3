import { sql } from 'kysely';
import type { Db } from './database.js';

/** Enough to turn a burst into a few commits; bounded so no request waits behind a long batch. */
const MAX_BATCH = 64;

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

  constructor(db: Db) {
    this.#db = db;
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
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    try {
      await this.#db.transaction().execute(async (trx) => {
        if (batch.length === 1) {
          // Alone: no savepoint needed; a failure rolls back the whole (one-request) transaction.
          outcomes.push({ ok: true, value: await (batch[0] as Pending).work(trx) });
          return;
        }
        for (const pending of batch) {
          await sql`SAVEPOINT edgeward_request`.execute(trx);
          try {
            const value = await pending.work(trx);
            await sql`RELEASE edgeward_request`.execute(trx);
            outcomes.push({ ok: true, value });
          } catch (error) {
            await sql`ROLLBACK TO edgeward_request`.execute(trx);
            await sql`RELEASE edgeward_request`.execute(trx);
            outcomes.push({ ok: false, error });
          }
        }
      });
    } catch (error) {
      // The transaction as a whole failed (a lone request's own error, or the COMMIT): nothing of
      // the batch was committed, so every request of it fails.
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
