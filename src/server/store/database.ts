import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { migrationProvider } from './migrations/index.js';
import type { Database } from './tables.js';

export type Db = Kysely<Database>;

export interface DatabaseOptions {
  /** Directory of the embedded SQLite file; ignored when `databaseUrl` is set. */
  dataDir: string;
  /** `postgres://...` to share one account between several replicas. */
  databaseUrl?: string | undefined;
}

export const SQLITE_FILE = 'edgeward.sqlite';

export async function openDatabase(options: DatabaseOptions): Promise<Db> {
  const db = options.databaseUrl ? openPostgres(options.databaseUrl) : openSqlite(options.dataDir);
  await migrate(db);
  return db;
}

function openSqlite(dataDir: string): Db {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = new SqliteDatabase(join(dataDir, SQLITE_FILE));
  // WAL for concurrent readers; synchronous=FULL so an acknowledged write survives a crash or power loss.
  file.pragma('journal_mode = WAL');
  file.pragma('synchronous = FULL');
  file.pragma('foreign_keys = ON');
  file.pragma('busy_timeout = 5000');
  return new Kysely<Database>({ dialect: new SqliteDialect({ database: file }) });
}

function openPostgres(url: string): Db {
  const pool = new pg.Pool({ connectionString: url });
  // An idle connection dropped by the database (restart, failover) is replaced on next use; without
  // a listener the pool's error event would crash the process.
  pool.on('error', (error) => process.emitWarning(`PostgreSQL connection lost: ${error.message}`));
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

async function migrate(db: Db): Promise<void> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed`, { cause: error });
  }
}
