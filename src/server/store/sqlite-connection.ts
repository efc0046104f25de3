import SqliteDatabase from 'better-sqlite3';
import type { SqliteDatabase as KyselySqliteDatabase, SqliteStatement } from 'kysely';

/** Distinct statements the server runs are a few hundred; `IN (?, ?, …)` lists of varied length add more. */
const MAX_CACHED_STATEMENTS = 1000;

/**
 * One SQLite connection as Kysely uses it, with its prepared statements kept by SQL text: Kysely
 * prepares every query anew, and compiling SQL costs more than running a lookup by primary key.
 */
export class SqliteConnection implements KyselySqliteDatabase {
  readonly file: SqliteDatabase.Database;
  readonly #statements = new Map<string, SqliteDatabase.Statement>();

  constructor(path: string, options: { queryOnly: boolean }) {
    this.file = new SqliteDatabase(path);
    // WAL lets the read connection read while the writer writes; synchronous=FULL makes a commit
    // survive a crash or power loss (group commit does the fsync itself, off the event loop).
    this.file.pragma('journal_mode = WAL');
    this.file.pragma('synchronous = FULL');
    this.file.pragma('foreign_keys = ON');
    this.file.pragma('busy_timeout = 5000');
    if (options.queryOnly) this.file.pragma('query_only = ON');
  }

  prepare(sql: string): SqliteStatement {
    const statement = this.#statement(sql);
    return {
      reader: statement.reader,
      all: (parameters) => statement.all(parameters),
      run: (parameters) => statement.run(parameters),
      // A statement being iterated is busy until the iterator ends: a stream gets its own.
      iterate: (parameters) => this.file.prepare(sql).iterate(parameters),
    };
  }

  #statement(sql: string): SqliteDatabase.Statement {
    let statement = this.#statements.get(sql);
    if (statement) {
      // Most recently used last, so the first key is the one to evict.
      this.#statements.delete(sql);
    } else {
      statement = this.file.prepare(sql);
      if (this.#statements.size >= MAX_CACHED_STATEMENTS) {
        const oldest = this.#statements.keys().next().value;
        if (oldest !== undefined) this.#statements.delete(oldest);
      }
    }
    this.#statements.set(sql, statement);
    return statement;
  }

  /**
   * Runs a read on a prepared statement at once, without Kysely's connection mutex and promise
   * chain: better-sqlite3 is synchronous, so on a query-only connection nothing can interleave.
   */
  readRows<R>(sql: string, parameters: readonly unknown[]): R[] {
    return this.#statement(sql).all(parameters) as R[];
  }

  get inTransaction(): boolean {
    return this.file.inTransaction;
  }

  close(): void {
    this.#statements.clear();
    this.file.close();
  }
}
