import type { Kysely, Migration } from 'kysely';
import { idColumnType } from './column-types.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against the schema as it was, not today's types
type AnyDb = Kysely<any>;

/**
 * Certificates the server obtains by ACME (RFC 8555).
 * - `acme_accounts`: one account per directory URL, its key sealed like every private key.
 * - `managed_certificates`: one row per certificate the server keeps (its subject: the names of one
 *   owner), with its schedule (`renews_at`, `retries_at`), the job's last outcome, the order being
 *   worked on (so a restart resumes it) and the lease of the replica working on it.
 * - `acme_challenges`: the pending challenges, sent to every edge in its configuration.
 */
export const acme: Migration = {
  async up(db: AnyDb) {
    await db.schema
      .createTable('acme_accounts')
      .addColumn('directory_url', 'text', (c) => c.primaryKey())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('email', 'text', (c) => c.notNull())
      .addColumn('key_sealed', 'text', (c) => c.notNull())
      .addColumn('account_url', 'text')
      .execute();
    await db.schema
      .createTable('managed_certificates')
      .addColumn('subject', 'text', (c) => c.primaryKey())
      .addColumn('created_at', 'text', (c) => c.notNull())
      // JSON array of DNS names, the first one the certificate's common name.
      .addColumn('domains', 'text', (c) => c.notNull())
      .addColumn('key_type', 'text', (c) => c.notNull())
      // The TLS certificate in force (a row of tls_certificates), once one was issued.
      .addColumn('certificate_id', idColumnType(db))
      .addColumn('not_after', 'text')
      .addColumn('renews_at', 'text')
      // When the next attempt may start after a failure (null: none failed since the last success).
      .addColumn('retries_at', 'text')
      .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('error_code', 'text')
      .addColumn('msg', 'text', (c) => c.notNull().defaultTo(''))
      // When the current job (first issuance or a renewal) started; null while none runs.
      .addColumn('job_started_at', 'text')
      .addColumn('order_url', 'text')
      .addColumn('lease_owner', 'text')
      .addColumn('lease_expires_at', 'text')
      .execute();
    await db.schema
      .createTable('acme_challenges')
      .addColumn('token', 'text', (c) => c.primaryKey())
      .addColumn('subject', 'text', (c) => c.notNull())
      .addColumn('domain', 'text', (c) => c.notNull())
      // http-01 | tls-alpn-01
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('key_authorization', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('acme_challenges_subject').on('acme_challenges').column('subject').execute();
  },
};
