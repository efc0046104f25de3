import type { Kysely, Migration } from 'kysely';
import { idColumnType } from './column-types.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against the schema as it was, not today's types
type AnyDb = Kysely<any>;

function described(db: AnyDb, table: string) {
  return db.schema
    .createTable(table)
    .addColumn('id', idColumnType(db), (c) => c.primaryKey())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('metadata', 'text', (c) => c.notNull().defaultTo(''));
}

export const certificatesEdgesEvents: Migration = {
  async up(db: AnyDb) {
    await described(db, 'certificate_authorities')
      .addColumn('ca_pem', 'text', (c) => c.notNull())
      .addColumn('subject_common_name', 'text', (c) => c.notNull())
      .addColumn('not_before', 'text', (c) => c.notNull())
      .addColumn('not_after', 'text', (c) => c.notNull())
      .addColumn('key_usages', 'text', (c) => c.notNull())
      .addColumn('extended_key_usages', 'text', (c) => c.notNull())
      .execute();
    await described(db, 'tls_certificates')
      .addColumn('certificate_pem', 'text', (c) => c.notNull())
      .addColumn('private_key_sealed', 'text', (c) => c.notNull())
      // Every field derived from the leaf, as the JSON the API shows: derived once, at upload.
      .addColumn('derived', 'text', (c) => c.notNull())
      .execute();
    await described(db, 'ssh_certificate_authorities')
      .addColumn('key_type', 'text', (c) => c.notNull())
      .addColumn('public_key', 'text', (c) => c.notNull())
      .addColumn('private_key_sealed', 'text', (c) => c.notNull())
      .execute();
    for (const table of ['ssh_host_certificates', 'ssh_user_certificates']) {
      await described(db, table)
        .addColumn('ssh_certificate_authority_id', 'text', (c) => c.notNull())
        .addColumn('public_key', 'text', (c) => c.notNull())
        .addColumn('key_type', 'text', (c) => c.notNull())
        .addColumn('principals', 'text', (c) => c.notNull())
        .addColumn('critical_options', 'text', (c) => c.notNull().defaultTo('{}'))
        .addColumn('extensions', 'text', (c) => c.notNull().defaultTo('{}'))
        .addColumn('valid_after', 'text', (c) => c.notNull())
        .addColumn('valid_until', 'text', (c) => c.notNull())
        .addColumn('certificate', 'text', (c) => c.notNull())
        .execute();
    }
    await described(db, 'agent_ingresses')
      .addColumn('domain', 'text', (c) => c.notNull().unique())
      .addColumn('ns_targets', 'text', (c) => c.notNull())
      .addColumn('region_domains', 'text', (c) => c.notNull())
      .addColumn('certificate_management_policy', 'text')
      .addColumn('certificate_management_status', 'text')
      .execute();
    await described(db, 'tunnel_group_backends')
      .addColumn('labels', 'text', (c) => c.notNull())
      .execute();
    for (const table of ['tls_edges', 'https_edges', 'tcp_edges']) {
      await described(db, table)
        .addColumn('hostports', 'text', (c) => c.notNull())
        // Module name -> its stored (write) form; absent modules are null in responses.
        .addColumn('modules', 'text', (c) => c.notNull().defaultTo('{}'))
        .execute();
    }
    // A hostport is served by one edge at a time; the primary key makes that hold under races too.
    await db.schema
      .createTable('edge_hostports')
      .addColumn('hostport', 'text', (c) => c.primaryKey())
      .addColumn('edge_id', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('edge_hostports_edge').on('edge_hostports').column('edge_id').execute();
    await described(db, 'https_edge_routes')
      .addColumn('edge_id', 'text', (c) => c.notNull())
      .addColumn('match_type', 'text', (c) => c.notNull())
      .addColumn('match', 'text', (c) => c.notNull())
      .addColumn('modules', 'text', (c) => c.notNull().defaultTo('{}'))
      .execute();
    await db.schema.createIndex('https_edge_routes_edge').on('https_edge_routes').column('edge_id').execute();
    // Two routes of one edge may not select the same requests, even when created concurrently.
    await db.schema
      .createIndex('https_edge_routes_match')
      .on('https_edge_routes')
      .columns(['edge_id', 'match_type', 'match'])
      .unique()
      .execute();
    // The durable outbox of account events, written in the same transaction as the change itself.
    await db.schema
      .createTable('events')
      .addColumn('id', idColumnType(db), (c) => c.primaryKey())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('object_id', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('delivered_at', 'text')
      .execute();
    await db.schema.createIndex('events_undelivered').on('events').columns(['delivered_at', 'id']).execute();
  },
};
