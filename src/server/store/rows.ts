import { notFound } from '../errors/api-error.js';
import { runCompiled, slot } from './compiled-queries.js';
import type { Db } from './database.js';
import { type Page, type PageRequest, pageOf } from './paging.js';
import type { Database } from './tables.js';

/** The tables whose rows have an `id`: every resource the API serves. */
export type TableWithId = {
  [T in keyof Database]: Database[T] extends { id: string } ? T : never;
}[keyof Database];
// Our tables use no Generated/ColumnType wrappers, so a selected row is the table type itself.
export type Row<T extends TableWithId> = Database[T];

/** Columns of `T` holding the id of the user or bot that owns a row. */
export type OwnerColumn<T extends TableWithId> = {
  [C in keyof Row<T>]: Row<T>[C] extends string ? C : never;
}[keyof Row<T>] &
  string;

/** A string column of `T` and the value it must equal. */
export type ColumnEquals<T extends TableWithId> = readonly [column: keyof Row<T> & string, value: string];

/**
 * Kysely cannot type a query that is generic over the table name; every helper here narrows with
 * one cast, on table and column names that are ours, never user input.
 */
// biome-ignore lint/suspicious/noExplicitAny: see above — the cast is confined to this file
type Loose = any;

export async function findRow<T extends TableWithId>(
  db: Db,
  table: T,
  id: string,
): Promise<Row<T> | undefined> {
  // The most frequent query of all (every GET, PATCH and DELETE of one resource): compiled once.
  const rows = await runCompiled<Row<T>>(
    db,
    `find ${table}`,
    () => (db as Loose).selectFrom(table).selectAll().where('id', '=', slot('id')),
    { id },
  );
  return rows[0];
}

/** The row, or a 404 naming `kind` ("IP policy with id ... not found"). */
export async function requireRow<T extends TableWithId>(
  db: Db,
  table: T,
  id: string,
  kind: string,
): Promise<Row<T>> {
  const row = await findRow(db, table, id);
  if (!row) throw notFound(kind, id);
  return row;
}

export async function insertRow<T extends TableWithId>(db: Db, table: T, row: Row<T>): Promise<void> {
  await (db as Loose).insertInto(table).values(row).execute();
}

/** Sets the defined members of `changes`; undefined ones (and an empty change) leave the row alone. */
export async function updateRow<T extends TableWithId>(
  db: Db,
  table: T,
  id: string,
  changes: Partial<Row<T>>,
): Promise<void> {
  const defined = Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined));
  if (Object.keys(defined).length === 0) return;
  await (db as Loose).updateTable(table).set(defined).where('id', '=', id).execute();
}

export async function deleteRow<T extends TableWithId>(db: Db, table: T, id: string): Promise<void> {
  await (db as Loose).deleteFrom(table).where('id', '=', id).execute();
}

/** Deletes the rows of `table` whose `column` is `value`; answers their ids, oldest first. */
export async function deleteRowsWhere<T extends TableWithId>(
  db: Db,
  table: T,
  column: keyof Row<T> & string,
  value: string,
): Promise<string[]> {
  const rows = (await (db as Loose)
    .selectFrom(table)
    .select('id')
    .where(column, '=', value)
    .orderBy('id')
    .execute()) as { id: string }[];
  if (rows.length === 0) return [];
  await (db as Loose).deleteFrom(table).where(column, '=', value).execute();
  return rows.map((row) => row.id);
}

/**
 * One page of the rows of `table` whose columns equal `where`: newest first, `before_id`
 * exclusive (see `pageOf`). Compiled once per table, filter columns and first-or-later page.
 */
export async function fetchRowsPage<T extends TableWithId>(
  db: Db,
  table: T,
  where: readonly ColumnEquals<T>[],
  page: PageRequest,
): Promise<Page<Row<T>>> {
  const later = page.beforeId !== undefined;
  const columns = where.map(([column]) => column);
  const values: Record<string, unknown> = { limit: page.limit + 1, before: page.beforeId };
  for (const [column, value] of where) values[`=${column}`] = value;
  const rows = await runCompiled<Row<T>>(
    db,
    `page ${table} ${columns.join(',')}${later ? ' before' : ''}`,
    () => {
      let select = (db as Loose).selectFrom(table).selectAll();
      for (const column of columns) select = select.where(column, '=', slot(`=${column}`));
      if (later) select = select.where('id', '<', slot('before'));
      return select.orderBy('id', 'desc').limit(slot('limit'));
    },
    values,
  );
  return pageOf(rows, page.limit);
}
