import type { Kysely, Migration } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against the schema as it was, not today's types
type AnyDb = Kysely<any>;

/**
 * Edges advertise where agents (`tunnel_addr`) and other edges (`relay_addr`) reach them, so every
 * edge can tell its agents about the others and pass a connection to the edge holding a session.
 * Null: the edge advertises nothing (it is reached only through the shared address).
 */
export const edgeAddresses: Migration = {
  async up(db: AnyDb) {
    await db.schema.alterTable('edge_processes').addColumn('tunnel_addr', 'text').execute();
    await db.schema.alterTable('edge_processes').addColumn('relay_addr', 'text').execute();
  },
};
