import { setTimeout as sleep } from 'node:timers/promises';
import { PostgresAdapter } from 'kysely';
import { type Db, durableWriterOf } from './database.js';
import { GroupCommitter } from './group-commit.js';

/** Enough for a burst of requests on one row; each retry waits a little longer (with jitter). */
const MAX_ATTEMPTS = 10;
const FIRST_BACKOFF_MS = 5;
const MAX_BACKOFF_MS = 200;

/**
 * SQLSTATE 40001 (serialization_failure) and 40P01 (deadlock_detected): PostgreSQL rolled the
 * transaction back so that it can run again on what the others committed.
 */
export function isSerializationFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '40001' || code === '40P01';
}

/** One per SQLite database: PostgreSQL already shares one WAL flush among concurrent commits. */
const groupCommitters = new WeakMap<Db, GroupCommitter>();

function groupCommitterOf(db: Db): GroupCommitter {
  let committer = groupCommitters.get(db);
  if (!committer) {
    committer = new GroupCommitter(db, durableWriterOf(db));
    groupCommitters.set(db, committer);
  }
  return committer;
}

/** Why writes on `db` are refused for good, if they are (see `GroupCommitter.broken`). */
export function writesBrokenOn(db: Db): Error | undefined {
  return groupCommitters.get(db)?.broken;
}

/**
 * Runs `work` in one write transaction that behaves as if it ran alone. Routes check before they
 * write ("is this the admin's last key?", "does an edge use this CA?"): SQLite runs write
 * transactions one at a time, so the check holds until the commit. PostgreSQL's default READ
 * COMMITTED lets two replicas (or two requests) both pass a check on what the other is changing, so
 * there the transaction runs SERIALIZABLE, and one PostgreSQL aborts to keep that promise is run
 * again from the start. On SQLite, concurrent calls share one commit (see `GroupCommitter`).
 * `work` must therefore only touch the database (slow or outside work belongs before the
 * transaction).
 */
export async function inWriteTransaction<T>(db: Db, work: (trx: Db) => Promise<T>): Promise<T> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return groupCommitterOf(db).run(work);
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().setIsolationLevel('serializable').execute(work);
    } catch (error) {
      if (!isSerializationFailure(error)) throw error;
      if (attempt >= MAX_ATTEMPTS) {
        const message = `write transaction still conflicting with concurrent ones after ${attempt} attempts`;
        throw new Error(message, { cause: error });
      }
      const ceiling = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (attempt - 1));
      await sleep(Math.random() * ceiling);
    }
  }
}
