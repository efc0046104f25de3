import { Agent as HttpsAgent } from 'node:https';
import type { FastifyBaseLogger } from 'fastify';
import type { SecretBox } from '../../crypto/secret-box.js';
import { rfc3339 } from '../../lib/rfc3339.js';
import type { Db } from '../store/database.js';
import { recordProblemsOf } from './acme-problems.js';
import type { AcmeSettings } from './acme-settings.js';

type AcmeModule = typeof import('acme-client');
export type AcmeClient = InstanceType<AcmeModule['Client']>;

const keyContext = (directoryUrl: string) => `acme_accounts:${directoryUrl}:key`;

let configured: Promise<AcmeModule> | undefined;

/**
 * The ACME client library, loaded on first use and set up once per process: the CA bundle for a
 * private CA, its problems recorded, and its own retries off — a rate limit or an outage of the CA
 * is handled by the job's schedule (which honours `Retry-After` across restarts), not by a client
 * sleeping inside a request.
 */
export function acmeModule(settings: AcmeSettings): Promise<AcmeModule> {
  configured ??= import('acme-client').then((module) => {
    const acme = (module as unknown as { default?: AcmeModule }).default ?? module;
    // The library keeps its own settings on the axios defaults, outside axios's types.
    const defaults = acme.axios.defaults as typeof acme.axios.defaults & {
      acmeSettings: Record<string, unknown>;
    };
    defaults.acmeSettings = { ...defaults.acmeSettings, retryMaxAttempts: 0 };
    if (settings.caBundlePem)
      acme.axios.defaults.httpsAgent = new HttpsAgent({ ca: settings.caBundlePem, keepAlive: true });
    acme.axios.defaults.timeout = settings.requestTimeoutMs;
    recordProblemsOf(acme.axios);
    return acme;
  });
  return configured;
}

/**
 * The server's account at the configured CA: its key generated once, sealed in the database and
 * shared by every replica (the first to insert wins), registered with the CA on first use.
 */
export async function acmeClient(
  db: Db,
  secretBox: SecretBox,
  settings: AcmeSettings,
  log: FastifyBaseLogger,
): Promise<AcmeClient> {
  const acme = await acmeModule(settings);
  let row = await readAccount(db, settings.directoryUrl);
  if (!row) {
    const key = (await acme.crypto.createPrivateEcdsaKey('P-256')).toString();
    await db
      .insertInto('acme_accounts')
      .values({
        directory_url: settings.directoryUrl,
        created_at: rfc3339(),
        email: settings.email,
        key_sealed: secretBox.seal(key, keyContext(settings.directoryUrl)),
        account_url: null,
      })
      .onConflict((conflict) => conflict.column('directory_url').doNothing())
      .execute();
    row = await readAccount(db, settings.directoryUrl);
    if (!row) throw new Error(`the ACME account of ${settings.directoryUrl} was not stored`);
  }
  const accountKey = secretBox.open(row.key_sealed, keyContext(settings.directoryUrl));
  const client = new acme.Client({
    directoryUrl: settings.directoryUrl,
    accountKey,
    ...(row.account_url ? { accountUrl: row.account_url } : {}),
    backoffAttempts: settings.pollAttempts,
    backoffMin: settings.pollMinMs,
    backoffMax: settings.pollMaxMs,
  });
  if (!row.account_url || row.email !== settings.email) {
    // Idempotent at the CA: the same key finds the same account (RFC 8555 §7.3.1).
    await client.createAccount({ termsOfServiceAgreed: true, contact: [`mailto:${settings.email}`] });
    if (row.account_url && row.email !== settings.email)
      await client.updateAccount({ contact: [`mailto:${settings.email}`] });
    await db
      .updateTable('acme_accounts')
      .set({ account_url: client.getAccountUrl(), email: settings.email })
      .where('directory_url', '=', settings.directoryUrl)
      .execute();
    log.info(
      { directoryUrl: settings.directoryUrl, accountUrl: client.getAccountUrl() },
      'ACME account registered',
    );
  }
  return client;
}

function readAccount(db: Db, directoryUrl: string) {
  return db
    .selectFrom('acme_accounts')
    .selectAll()
    .where('directory_url', '=', directoryUrl)
    .executeTakeFirst();
}

/** Opens the sealed account key: for the backup check that a secret key belongs to a database. */
export function openAccountKey(
  secretBox: SecretBox,
  row: { directory_url: string; key_sealed: string },
): string {
  return secretBox.open(row.key_sealed, keyContext(row.directory_url));
}
