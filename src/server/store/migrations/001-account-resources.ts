import { type Kysely, type Migration, sql } from 'kysely';
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

export const accountResources: Migration = {
  async up(db: AnyDb) {
    await db.schema
      .createTable('users')
      .addColumn('id', idColumnType(db), (c) => c.primaryKey())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('is_admin', 'integer', (c) => c.notNull())
      .execute();
    // One admin user per account, even when replicas bootstrap at the same moment.
    await db.schema
      .createIndex('users_one_admin')
      .on('users')
      .column('is_admin')
      .unique()
      .where(sql.ref('is_admin'), '=', 1)
      .execute();
    await db.schema
      .createTable('bot_users')
      .addColumn('id', idColumnType(db), (c) => c.primaryKey())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('active', 'integer', (c) => c.notNull())
      .execute();
    await described(db, 'api_keys')
      .addColumn('owner_id', 'text', (c) => c.notNull())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .execute();
    await db.schema.createIndex('api_keys_owner').on('api_keys').column('owner_id').execute();
    await described(db, 'credentials')
      .addColumn('owner_id', 'text', (c) => c.notNull())
      .addColumn('acl', 'text', (c) => c.notNull())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .execute();
    await db.schema.createIndex('credentials_owner').on('credentials').column('owner_id').execute();
    await described(db, 'ssh_credentials')
      .addColumn('owner_id', 'text', (c) => c.notNull())
      .addColumn('acl', 'text', (c) => c.notNull())
      .addColumn('public_key', 'text', (c) => c.notNull())
      .addColumn('fingerprint', 'text', (c) => c.notNull().unique())
      .execute();
    await db.schema.createIndex('ssh_credentials_owner').on('ssh_credentials').column('owner_id').execute();
    await described(db, 'ip_policies').execute();
    await described(db, 'ip_policy_rules')
      .addColumn('ip_policy_id', 'text', (c) => c.notNull())
      .addColumn('cidr', 'text', (c) => c.notNull())
      .addColumn('action', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('ip_policy_rules_policy')
      .on('ip_policy_rules')
      .column('ip_policy_id')
      .execute();
    await described(db, 'reserved_addrs')
      .addColumn('region', 'text', (c) => c.notNull())
      .addColumn('addr', 'text', (c) => c.notNull().unique())
      .addColumn('endpoint_configuration_id', 'text')
      .execute();
    await described(db, 'event_destinations')
      .addColumn('format', 'text', (c) => c.notNull())
      .addColumn('target_sealed', 'text', (c) => c.notNull())
      .execute();
    await described(db, 'event_subscriptions')
      .addColumn('source_types', 'text', (c) => c.notNull())
      .addColumn('destination_ids', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('tunnel_sessions')
      .addColumn('id', idColumnType(db), (c) => c.primaryKey())
      .addColumn('started_at', 'text', (c) => c.notNull())
      .addColumn('agent_version', 'text', (c) => c.notNull())
      .addColumn('credential_id', 'text', (c) => c.notNull())
      .addColumn('ip', 'text', (c) => c.notNull())
      .addColumn('metadata', 'text')
      .addColumn('os', 'text', (c) => c.notNull())
      .addColumn('region', 'text', (c) => c.notNull())
      .addColumn('transport', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('idempotency_keys')
      .addColumn('principal_id', 'text', (c) => c.notNull())
      .addColumn('idempotency_key', 'text', (c) => c.notNull())
      .addColumn('fingerprint', 'text', (c) => c.notNull())
      .addColumn('status_code', 'integer', (c) => c.notNull())
      .addColumn('response_sealed', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('idempotency_keys_pk', ['principal_id', 'idempotency_key'])
      .execute();
  },
};
