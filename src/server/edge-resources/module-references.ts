import type { Db } from '../store/database.js';
import { parseStoredModules, type StoredModules } from './stored-modules.js';

/** Tables with a `modules` JSON column, and how messages name their rows. */
export const MODULE_OWNERS = {
  tls_edges: 'TLS edge',
  https_edges: 'HTTPS edge',
  tcp_edges: 'TCP edge',
  https_edge_routes: 'HTTPS edge route',
} as const;
export type ModuleOwnerTable = keyof typeof MODULE_OWNERS;

/**
 * The edges or routes whose modules reference `id`, in the order of `tables`. Modules are one JSON
 * column per row, so `LIKE '%"<id>"%'` narrows the rows in SQL; LIKE is only a prefilter (`_` in ids
 * is a wildcard and SQLite's LIKE ignores case), and `references` decides on the parsed modules.
 */
export async function moduleOwnersReferencing(
  db: Db,
  tables: readonly ModuleOwnerTable[],
  id: string,
  references: (modules: StoredModules) => boolean,
): Promise<Array<{ table: ModuleOwnerTable; id: string }>> {
  const owners: Array<{ table: ModuleOwnerTable; id: string }> = [];
  for (const table of tables) {
    const candidates = await db
      .selectFrom(table)
      .select(['id', 'modules'])
      .where('modules', 'like', `%"${id}"%`)
      .execute();
    for (const row of candidates) {
      if (references(parseStoredModules(row.modules))) owners.push({ table, id: row.id });
    }
  }
  return owners;
}
