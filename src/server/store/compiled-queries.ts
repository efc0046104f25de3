import { type Compilable, type CompiledQuery, PostgresAdapter } from 'kysely';
import { type Db, directReaderOf } from './database.js';

/**
 * Marks where a value goes in a query compiled once: NUL never occurs in a value the API accepts
 * (route.ts refuses it), so a marker cannot be mistaken for one.
 */
export function slot(name: string): string {
  return `\u0000slot:${name}\u0000`;
}

const compiled = new Map<string, CompiledQuery>();

/**
 * Runs a query whose SQL depends only on `shape` (table, columns, which clauses), compiling it
 * once per dialect instead of on every request: Kysely builds and compiles a query anew each time,
 * which costs more than running a lookup by primary key. `build` writes `slot(name)` wherever a
 * value goes; `values` fills them in. Outside a transaction the compiled SQL runs directly:
 * SQLite's query-only connection, or a prepared statement on PostgreSQL's pool.
 */
export async function runCompiled<R>(
  db: Db,
  shape: string,
  build: () => Compilable<R>,
  values: Record<string, unknown>,
): Promise<R[]> {
  const dialect = db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
  const key = `${dialect}\u0000${shape}`;
  let query = compiled.get(key);
  if (!query) {
    query = build().compile();
    compiled.set(key, query);
  }
  const parameters = query.parameters.map((parameter) => {
    if (typeof parameter !== 'string' || !parameter.startsWith('\u0000slot:')) return parameter;
    const name = parameter.slice('\u0000slot:'.length, -1);
    if (!Object.hasOwn(values, name)) throw new Error(`no value for slot '${name}' of query ${shape}`);
    return values[name];
  });
  const direct = directReaderOf(db);
  if (direct) return direct.readRows<R>(query.sql, parameters);
  const result = await db.executeQuery<R>({ ...query, parameters } as CompiledQuery<R>);
  return result.rows;
}
