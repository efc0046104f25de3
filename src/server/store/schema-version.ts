import { DEFAULT_MIGRATION_TABLE } from 'kysely';
import type { Db } from './database.js';

/**
 * Refuses a database migrated by a newer release: its schema may hold what this code would
 * misread or overwrite, so starting on it is worse than not starting. Kysely would only say a
 * migration is "missing"; this names the migrations, the release's newest, and what to do.
 */
export async function refuseNewerSchema(db: Db, known: readonly string[]): Promise<void> {
  const tables = await db.introspection.getTables({ withInternalKyselyTables: true });
  if (!tables.some((table) => table.name === DEFAULT_MIGRATION_TABLE)) return;
  const applied = await db
    .withoutPlugins()
    // The migration table is Kysely's, outside the typed schema.
    .selectFrom(DEFAULT_MIGRATION_TABLE as never)
    .select('name' as never)
    .execute();
  const unknown = (applied as Array<{ name: string }>)
    .map((row) => row.name)
    .filter((name) => !known.includes(name));
  if (unknown.length === 0) return;
  throw new Error(
    `the database was migrated by a newer edgeward (it has ${unknown.sort().join(', ')}; this release ` +
      `knows up to ${known.at(-1) ?? 'none'}): run that newer release, or restore the backup taken before the upgrade`,
  );
}
