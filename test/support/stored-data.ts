import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { SQLITE_FILE } from '../../src/server/store/database.js';
import type { TestServer } from './server.js';

export interface StoredData {
  /** A file name on SQLite, `table <name>` on PostgreSQL: for assertion messages. */
  source: string;
  bytes: Buffer;
}

/**
 * All a test server has stored, for proving a secret is not kept in the clear. On SQLite the bytes
 * of the database file and its WAL (deleted rows and old versions included); on PostgreSQL, whose
 * files may be on another machine, every row of every table of the server's database as text.
 */
export async function storedData(t: TestServer): Promise<StoredData[]> {
  if (t.store === 'sqlite') {
    return [SQLITE_FILE, `${SQLITE_FILE}-wal`]
      .map((file) => join(t.dataDir, file))
      .filter((path) => existsSync(path))
      .map((path) => ({ source: path, bytes: readFileSync(path) }));
  }
  const db = t.server.app.edgeward.db;
  const { rows: tables } = await sql<{ name: string }>`
    select tablename as name from pg_tables where schemaname = current_schema()`.execute(db);
  const stored: StoredData[] = [];
  for (const { name } of tables) {
    const { rows } = await sql<{ row: string }>`select t::text as row from ${sql.table(name)} t`.execute(db);
    stored.push({ source: `table ${name}`, bytes: Buffer.from(rows.map((r) => r.row).join('\n')) });
  }
  return stored;
}
