import type { Migration, MigrationProvider } from 'kysely';
import { accountResources } from './001-account-resources.js';

/** Migrations are code (not files found at run time) so the bundle and the tests see the same list. */
const migrations: Record<string, Migration> = {
  '001-account-resources': accountResources,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
