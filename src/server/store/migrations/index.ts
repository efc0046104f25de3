import type { Migration, MigrationProvider } from 'kysely';
import { accountResources } from './001-account-resources.js';
import { certificatesEdgesEvents } from './002-certificates-edges-events.js';
import { edgeProcesses } from './003-edge-processes.js';
import { eventDelivery } from './004-event-delivery.js';
import { edgeAddresses } from './005-edge-addresses.js';
import { acme } from './006-acme.js';

/** Migrations are code (not files found at run time) so the bundle and the tests see the same list. */
const migrations: Record<string, Migration> = {
  '001-account-resources': accountResources,
  '002-certificates-edges-events': certificatesEdgesEvents,
  '003-edge-processes': edgeProcesses,
  '004-event-delivery': eventDelivery,
  '005-edge-addresses': edgeAddresses,
  '006-acme': acme,
};

/** The names of the migrations this release has, oldest first. */
export const MIGRATION_NAMES: readonly string[] = Object.keys(migrations).sort();

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
