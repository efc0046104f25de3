import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { Kysely, Migrator, PostgresDialect, SqliteDialect } from 'kysely';
import type { DurableWriter } from './group-commit.js';
import { MIGRATION_NAMES, migrationProvider } from './migrations/index.js';
import { loadPg } from './pg-loader.js';
import { PgPreparedReader } from './pg-prepared-reader.js';
import { refuseNewerSchema } from './schema-version.js';
import { SqliteConnection } from './sqlite-connection.js';
import type { Database } from './tables.js';
import { WalSync } from './wal-sync.js';

export type Db = Kysely<Database>;

/** The store: `db` for writes (and reads that must see them), `reads` for reads outside any transaction. */
export interface Store {
  db: Db;
  /**
   * SQLite: a second, query-only connection, so reads never queue behind a write transaction that
   * holds the writer (WAL lets it read the last commit meanwhile). PostgreSQL: `db`, whose pool
   * already gives each request its own connection.
   */
  reads: Db;
  destroy(): Promise<void>;
}

export interface DatabaseOptions {
  /** Directory of the embedded SQLite file; ignored when `databaseUrl` is set. */
  dataDir: string;
  /** `postgres://...` to share one account between several replicas. */
  databaseUrl?: string | undefined;
}

export const SQLITE_FILE = 'edgeward.sqlite';

/** Runs a compiled read without Kysely's executor (see `runCompiled`). */
export interface DirectReader {
  readRows<R>(sql: string, parameters: readonly unknown[]): R[] | Promise<R[]>;
}

/**
 * What reads on a Db may run directly: SQLite's query-only connection behind `reads`, and
 * PostgreSQL's pool behind `db`, with prepared statements. Never a transaction's Db.
 */
const directReaders = new WeakMap<Db, DirectReader>();

export function directReaderOf(db: Db): DirectReader | undefined {
  return directReaders.get(db);
}

/** SQLite's writer `db`, for group commit to make its COMMITs durable itself (see `GroupCommitter`). */
const durableWriters = new WeakMap<Db, DurableWriter>();

export function durableWriterOf(db: Db): DurableWriter | undefined {
  return durableWriters.get(db);
}

export async function openDatabase(options: DatabaseOptions): Promise<Store> {
  if (options.databaseUrl) {
    const db = await openPostgres(options.databaseUrl);
    await migrateOrClose(db);
    return { db, reads: db, destroy: () => db.destroy() };
  }
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const path = join(options.dataDir, SQLITE_FILE);
  createOwnerOnly(path);
  const writer = new SqliteConnection(path, { queryOnly: false });
  const db = kyselyOver(writer);
  await migrateOrClose(db);
  const walSync = new WalSync(`${path}-wal`);
  durableWriters.set(db, { log: walSync, inTransaction: () => writer.inTransaction });
  // Opened after the migrations, so it never reads a schema older than the code's.
  const readConnection = new SqliteConnection(path, { queryOnly: true });
  const reads = kyselyOver(readConnection);
  directReaders.set(reads, readConnection);
  return {
    db,
    reads,
    destroy: async () => {
      await reads.destroy();
      await db.destroy();
      await walSync.close();
    },
  };
}

/**
 * Creates the database file, when it is new, readable by its owner only, as `secret.key` is: it
 * holds token hashes and the account's whole configuration. SQLite would create it 0644, and
 * creates its `-wal` and `-shm` files with the database file's mode, so they follow. An existing
 * file keeps the mode it has (an operator may have chosen it).
 */
function createOwnerOnly(path: string): void {
  closeSync(openSync(path, 'a', 0o600));
}

function kyselyOver(connection: SqliteConnection): Db {
  return new Kysely<Database>({ dialect: new SqliteDialect({ database: connection }) });
}

async function openPostgres(url: string): Promise<Db> {
  const pg = await loadPg();
  const pool = new pg.Pool({ connectionString: url });
  // An idle connection dropped by the database (restart, failover) is replaced on next use; without
  // a listener the pool's error event would crash the process.
  pool.on('error', (error) => process.emitWarning(`PostgreSQL connection lost: ${error.message}`));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  directReaders.set(db, new PgPreparedReader(pool));
  return db;
}

/** Runs the migrations forward; on failure the connection is closed before the error goes up. */
async function migrateOrClose(db: Db): Promise<void> {
  try {
    await refuseNewerSchema(db, MIGRATION_NAMES);
    await migrate(db);
  } catch (error) {
    await db.destroy();
    throw error;
  }
}

async function migrate(db: Db): Promise<void> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed`, { cause: error });
  }
}
