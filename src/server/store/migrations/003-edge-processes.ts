import type { Kysely, Migration } from 'kysely';
import { idColumnType } from './column-types.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against the schema as it was, not today's types
type AnyDb = Kysely<any>;

/**
 * Sessions are held by edge processes: each session row names its edge, and each connected edge
 * renews a lease. `GET /tunnel_sessions` lists only sessions whose edge's lease is current, so an
 * edge (or the replica it talked to) that dies without saying goodbye takes its sessions with it.
 */
export const edgeProcesses: Migration = {
  async up(db: AnyDb) {
    // Sessions of the time before edges reported them are no one's: start from none.
    await db.deleteFrom('tunnel_sessions').execute();
    await db.schema
      .alterTable('tunnel_sessions')
      .addColumn('edge_id', 'text', (c) => c.notNull().defaultTo(''))
      .execute();
    // JSON object: the labels the session binds (its tunnel group), for backends' `tunnels`.
    await db.schema
      .alterTable('tunnel_sessions')
      .addColumn('labels', 'text', (c) => c.notNull().defaultTo('{}'))
      .execute();
    await db.schema.createIndex('tunnel_sessions_edge_id').on('tunnel_sessions').column('edge_id').execute();
    await db.schema
      .createTable('edge_processes')
      .addColumn('id', idColumnType(db), (c) => c.primaryKey())
      .addColumn('region', 'text', (c) => c.notNull())
      .addColumn('lease_expires_at', 'text', (c) => c.notNull())
      .execute();
  },
};
