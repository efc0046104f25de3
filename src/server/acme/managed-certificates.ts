import { newId } from '../../crypto/ids.js';
import type { SecretBox } from '../../crypto/secret-box.js';
import { loadX509 } from '../../crypto/x509-loader.js';
import { rfc3339 } from '../../lib/rfc3339.js';
import type { AgentIngressCertStatus } from '../../schemas/agent-ingresses.js';
import type { AcmeChallenge } from '../../schemas/edge-config.js';
import { idPrefixOf } from '../../schemas/id-prefixes.js';
import type { ChangeSignal } from '../events/change-signal.js';
import { privateKeySealContext } from '../routes/tls-certificates.js';
import type { Db } from '../store/database.js';
import type { ManagedCertificatesTable } from '../store/tables.js';
import { inWriteTransaction } from '../store/write-transaction.js';
import { agentIngressOf, type WantedCertificate } from './wanted-certificates.js';

export type ManagedRow = ManagedCertificatesTable;

/**
 * The database side of managed certificates: rows follow what the account wants, a replica leases
 * the ones due, and a job's outcome is written in one transaction (certificate, schedule, status)
 * followed by a change signal, so every edge is sent the new certificate at once.
 */
export class ManagedCertificates {
  constructor(
    private readonly db: Db,
    private readonly secretBox: SecretBox,
    private readonly changes: ChangeSignal,
  ) {}

  /**
   * Adds a row per newly wanted certificate (due at once) and removes those no longer wanted,
   * with their certificate and challenges, unless a job holds them (the next pass removes them).
   * Returns the subjects removed.
   */
  async follow(wanted: WantedCertificate[], now: Date): Promise<{ added: string[]; removed: string[] }> {
    const existing = await this.db
      .selectFrom('managed_certificates')
      .select(['subject', 'domains', 'key_type', 'lease_expires_at', 'certificate_id'])
      .execute();
    const wantedBySubject = new Map(wanted.map((certificate) => [certificate.subject, certificate]));
    const known = new Set(existing.map((row) => row.subject));
    const added = wanted.filter((certificate) => !known.has(certificate.subject));
    const free = (row: { lease_expires_at: string | null }) =>
      row.lease_expires_at === null || row.lease_expires_at < now.toISOString();
    const removed = existing.filter((row) => !wantedBySubject.has(row.subject) && free(row));
    // Names or key type changed (an agent ingress's policy): due again, the current one served meanwhile.
    const changed = existing.flatMap((row) => {
      const certificate = wantedBySubject.get(row.subject);
      const same =
        certificate &&
        certificate.keyType === row.key_type &&
        JSON.stringify(certificate.domains) === row.domains;
      return certificate && !same && free(row) ? [certificate] : [];
    });
    if (added.length === 0 && removed.length === 0 && changed.length === 0) return { added: [], removed: [] };
    await this.#write(async (trx) => {
      for (const certificate of added) {
        await trx
          .insertInto('managed_certificates')
          .values({
            subject: certificate.subject,
            created_at: rfc3339(now),
            domains: JSON.stringify(certificate.domains),
            key_type: certificate.keyType,
            certificate_id: null,
            not_after: null,
            renews_at: rfc3339(now),
            retries_at: null,
            failures: 0,
            error_code: null,
            msg: 'waiting for its first order',
            job_started_at: rfc3339(now),
            order_url: null,
            lease_owner: null,
            lease_expires_at: null,
          })
          .onConflict((conflict) => conflict.column('subject').doNothing())
          .execute();
      }
      for (const certificate of changed) {
        await trx
          .updateTable('managed_certificates')
          .set({
            domains: JSON.stringify(certificate.domains),
            key_type: certificate.keyType,
            renews_at: rfc3339(now),
            retries_at: null,
            failures: 0,
            error_code: null,
            msg: 'its names or key type changed: waiting for a new order',
            job_started_at: rfc3339(now),
            order_url: null,
          })
          .where('subject', '=', certificate.subject)
          .execute();
      }
      for (const certificate of [...added, ...changed]) await reflectOnAgentIngress(trx, certificate.subject);
      for (const row of removed) {
        await trx
          .deleteFrom('managed_certificates')
          .where('subject', '=', row.subject)
          .where((eb) =>
            eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', now.toISOString())]),
          )
          .execute();
        await trx.deleteFrom('acme_challenges').where('subject', '=', row.subject).execute();
        if (row.certificate_id)
          await trx.deleteFrom('tls_certificates').where('id', '=', row.certificate_id).execute();
      }
    });
    return {
      added: added.map((certificate) => certificate.subject),
      removed: removed.map((row) => row.subject),
    };
  }

  /**
   * Leases up to `limit` certificates due now (never issued, or past their renewal time, and not
   * waiting out a retry delay), each by one conditional UPDATE, so two replicas never order the
   * same certificate at once.
   */
  async leaseDue(owner: string, limit: number, leaseMs: number, now: Date): Promise<ManagedRow[]> {
    if (limit <= 0) return [];
    const nowIso = now.toISOString();
    const nowText = rfc3339(now);
    const due = await this.db
      .selectFrom('managed_certificates')
      .selectAll()
      .where((eb) => eb.or([eb('certificate_id', 'is', null), eb('renews_at', '<=', nowText)]))
      .where((eb) => eb.or([eb('retries_at', 'is', null), eb('retries_at', '<=', nowText)]))
      .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', nowIso)]))
      .orderBy('renews_at')
      .limit(limit)
      .execute();
    const leased: ManagedRow[] = [];
    for (const row of due) {
      const lease = { lease_owner: owner, lease_expires_at: new Date(now.getTime() + leaseMs).toISOString() };
      const result = await this.db
        .updateTable('managed_certificates')
        .set(lease)
        .where('subject', '=', row.subject)
        .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', nowIso)]))
        .executeTakeFirst();
      if (result.numUpdatedRows > 0n) leased.push({ ...row, ...lease });
    }
    return leased;
  }

  /** Updates a leased row, only while the lease is still `owner`'s; its agent ingress shows the new state. */
  async update(subject: string, owner: string, changes: Partial<ManagedRow>): Promise<void> {
    await this.db
      .updateTable('managed_certificates')
      .set(changes)
      .where('subject', '=', subject)
      .where('lease_owner', '=', owner)
      .execute();
    await reflectOnAgentIngress(this.db, subject);
  }

  /** Sends the challenges to every edge (a change of the edges' configuration). */
  async publish(subject: string, challenges: AcmeChallenge[], now: Date): Promise<void> {
    await this.#write(async (trx) => {
      await trx.deleteFrom('acme_challenges').where('subject', '=', subject).execute();
      for (const challenge of challenges)
        await trx
          .insertInto('acme_challenges')
          .values({ ...challenge, subject, created_at: rfc3339(now) })
          .onConflict((conflict) => conflict.column('token').doNothing())
          .execute();
    });
  }

  async withdraw(subject: string): Promise<void> {
    await this.#write(async (trx) => {
      await trx.deleteFrom('acme_challenges').where('subject', '=', subject).execute();
    });
  }

  /**
   * Stores an issued certificate as a TLS certificate the server manages (`issued_at` set), takes
   * the previous one out, and sets the next renewal; the lease is given back.
   */
  async issued(
    row: ManagedRow,
    owner: string,
    issued: { certificatePem: string; privateKeyPem: string },
    renewsAt: (notBefore: Date, notAfter: Date) => Date,
    now: Date,
  ): Promise<{ certificateId: string; notAfter: string; renewsAt: string }> {
    const x509 = await loadX509();
    const chain = x509.parsePemChain(issued.certificatePem, 'certificate');
    const [leaf] = chain;
    if (!leaf) throw new Error('the CA returned an empty certificate chain');
    const key = x509.parsePrivateKey(issued.privateKeyPem, 'private key');
    const id = newId(idPrefixOf('/tls_certificates'));
    const keyPem = key.export({ type: 'pkcs8', format: 'pem' }).toString();
    const derived = x509.leafCertificateFields(leaf, x509.privateKeyType(key, 'private key'), rfc3339(now));
    const notBefore = new Date(derived.not_before);
    const notAfter = new Date(derived.not_after);
    const renews = rfc3339(renewsAt(notBefore, notAfter));
    await this.#write(async (trx) => {
      await trx
        .insertInto('tls_certificates')
        .values({
          id,
          created_at: rfc3339(now),
          description: `managed by the server: ACME certificate for ${(JSON.parse(row.domains) as string[]).join(', ')}`,
          metadata: '',
          certificate_pem: x509.normalizedPem(chain),
          private_key_sealed: this.secretBox.seal(keyPem, privateKeySealContext(id)),
          derived: JSON.stringify(derived),
        })
        .execute();
      const updated = await trx
        .updateTable('managed_certificates')
        .set({
          certificate_id: id,
          not_after: derived.not_after,
          renews_at: renews,
          retries_at: null,
          failures: 0,
          error_code: null,
          msg: `issued by ${derived.issuer_common_name}; valid until ${derived.not_after}`,
          job_started_at: null,
          order_url: null,
          lease_owner: null,
          lease_expires_at: null,
        })
        .where('subject', '=', row.subject)
        .where('lease_owner', '=', owner)
        .executeTakeFirst();
      if (updated.numUpdatedRows === 0n)
        throw new Error(`the lease of ${row.subject} was lost before the certificate was stored`);
      if (row.certificate_id)
        await trx.deleteFrom('tls_certificates').where('id', '=', row.certificate_id).execute();
      await trx.deleteFrom('acme_challenges').where('subject', '=', row.subject).execute();
      await reflectOnAgentIngress(trx, row.subject);
    });
    return { certificateId: id, notAfter: derived.not_after, renewsAt: renews };
  }

  /** When the next certificate not leased now falls due (its renewal, or the end of its retry delay). */
  async nextDue(): Promise<Date | undefined> {
    const rows = await this.db
      .selectFrom('managed_certificates')
      .select(['certificate_id', 'renews_at', 'retries_at'])
      .where('lease_owner', 'is', null)
      .execute();
    const times = rows.map((row) =>
      Math.max(
        row.certificate_id === null || row.renews_at === null ? 0 : Date.parse(row.renews_at),
        row.retries_at === null ? 0 : Date.parse(row.retries_at),
      ),
    );
    return times.length === 0 ? undefined : new Date(Math.min(...times));
  }

  /**
   * Gives leases back so another replica may go on at once: those `owner` holds (on shutdown), or
   * every one (a SQLite server starting: the only process, so any lease is a killed one's).
   */
  async releaseAll(owner?: string): Promise<void> {
    let update = this.db
      .updateTable('managed_certificates')
      .set({ lease_owner: null, lease_expires_at: null });
    update =
      owner === undefined
        ? update.where('lease_owner', 'is not', null)
        : update.where('lease_owner', '=', owner);
    await update.execute();
  }

  async #write(work: (trx: Db) => Promise<void>): Promise<void> {
    await inWriteTransaction(this.db, async (trx) => {
      await work(trx);
      await this.changes.inTransaction(trx);
    });
    this.changes.committed();
  }
}

/**
 * An agent ingress's `certificate_management_status` as the spec words it, from its managed
 * certificate: the next renewal, and the job while one runs or after it failed (with the spec's
 * error code and the CA's words).
 */
export function certificateStatusOf(row: ManagedRow): AgentIngressCertStatus {
  const working = row.job_started_at !== null || row.failures > 0;
  return {
    renews_at: row.renews_at ?? row.created_at,
    provisioning_job: working
      ? {
          ...(row.error_code ? { error_code: row.error_code } : {}),
          msg: row.msg,
          started_at: row.job_started_at ?? row.created_at,
          // While a job runs its next attempt is now (or when another replica may take it over).
          retries_at: row.retries_at ?? rfc3339(new Date(row.lease_expires_at ?? Date.now())),
        }
      : null,
  };
}

async function reflectOnAgentIngress(db: Db, subject: string): Promise<void> {
  const ingressId = agentIngressOf(subject);
  if (ingressId === undefined) return;
  const row = await db
    .selectFrom('managed_certificates')
    .selectAll()
    .where('subject', '=', subject)
    .executeTakeFirst();
  if (!row) return;
  await db
    .updateTable('agent_ingresses')
    .set({ certificate_management_status: JSON.stringify(certificateStatusOf(row)) })
    .where('id', '=', ingressId)
    .where('certificate_management_policy', 'is not', null)
    .execute();
}
