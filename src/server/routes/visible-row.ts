import { notFound } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import { findRow, type OwnerColumn, type Row, type TableWithId } from '../store/rows.js';

/**
 * Whether the caller may see `row`: admins see every row, anyone else only rows whose
 * `ownerColumn` names them (spec, Authentication rule 3). Without an owner column, every row.
 */
function isVisible<T extends TableWithId>(
  ctx: RequestContext,
  row: Row<T>,
  ownerColumn: OwnerColumn<T> | undefined,
): boolean {
  return ownerColumn === undefined || ctx.principal.isAdmin || row[ownerColumn] === ctx.principal.id;
}

/**
 * The row if the caller may see it; a row of someone else is a 404 like an unknown id, so its
 * existence is not revealed.
 */
export async function requireVisibleRow<T extends TableWithId>(
  ctx: RequestContext,
  table: T,
  id: string,
  kind: string,
  ownerColumn: OwnerColumn<T> | undefined,
): Promise<Row<T>> {
  const row = await findRow(ctx.db, table, id);
  if (!row || !isVisible(ctx, row, ownerColumn)) throw notFound(kind, id);
  return row;
}
