import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * The type of id columns. Ids are time-ordered base62 and paging compares them as bytes; SQLite's
 * default BINARY collation does, but PostgreSQL's locale collations would sort 'a' before 'B', so
 * there the column uses the byte-order "C" collation.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are written against the schema as it was, not today's types
export function idColumnType(db: Kysely<any>) {
  return db.getExecutor().adapter instanceof PostgresAdapter ? sql`text collate "C"` : sql`text`;
}
