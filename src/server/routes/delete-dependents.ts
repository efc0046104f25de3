import { recordEvent } from '../events/outbox.js';
import type { Db } from '../store/database.js';
import { deleteRowsWhere, type Row, type TableWithId } from '../store/rows.js';

/**
 * Deletes the rows of `table` whose `column` is `value` (a cascade) and records a
 * `<resource>_deleted.v0` event for each, oldest first: subscribers see every removed row, as if
 * each had been deleted on its own.
 */
export async function deleteDependents<T extends TableWithId>(
  db: Db,
  table: T,
  column: keyof Row<T> & string,
  value: string,
  resource: string,
): Promise<void> {
  for (const id of await deleteRowsWhere(db, table, column, value)) {
    await recordEvent(db, { resource, action: 'deleted' }, id, undefined);
  }
}
