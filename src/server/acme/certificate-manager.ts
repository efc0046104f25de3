import type { FastifyBaseLogger } from 'fastify';
import { PostgresAdapter } from 'kysely';
import { Counter, Gauge, type Registry } from 'prom-client';
import { randomId } from '../../crypto/ids.js';
import type { SecretBox } from '../../crypto/secret-box.js';
import { rfc3339 } from '../../lib/rfc3339.js';
import type { ChangeSignal } from '../events/change-signal.js';
import type { Db } from '../store/database.js';
import { type AcmeClient, acmeClient, acmeModule } from './acme-account.js';
import { asOrderFailure, OrderFailure, runOrder } from './acme-order.js';
import { withProblemRecorder } from './acme-problems.js';
import type { AcmeSettings } from './acme-settings.js';
import { ManagedCertificates, type ManagedRow } from './managed-certificates.js';
import { renewalTime, retryTime } from './schedule.js';
import { wantedCertificates } from './wanted-certificates.js';

/** Changes to edges come in bursts (an operator applying a chart): look once they settle. */
const CHANGE_SETTLE_MS = 1_000;
/** Time for a published challenge to reach every edge (feed coalescing, NOTIFY to other replicas). */
const PUBLISH_SETTLE_MS = 1_000;

/**
 * Obtains and renews, by ACME, the certificates the account's edges need. Every replica runs one;
 * a certificate's job is leased in the database, so one replica works on it at a time and another
 * takes over after a crash. Everything a job decides (renewal time, retry time, status) is stored,
 * so a restart neither forgets a rate limit nor renews everything at once.
 */
export class CertificateManager {
  readonly #owner = randomId('acme');
  readonly #store: ManagedCertificates;
  readonly #running = new Map<string, Promise<void>>();
  readonly #skippedLogged = new Set<string>();
  readonly #metrics: { orders: Counter<'result' | 'error_code'> };
  #client: Promise<AcmeClient> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #settleTimer: NodeJS.Timeout | undefined;
  #dueTimer: NodeJS.Timeout | undefined;
  #pass: Promise<void> | undefined;
  #passAgain = false;
  #stopped = false;
  #released: Promise<void> | undefined;

  constructor(
    private readonly db: Db,
    private readonly secretBox: SecretBox,
    private readonly changes: ChangeSignal,
    private readonly log: FastifyBaseLogger,
    registry: Registry,
    private readonly settings: AcmeSettings,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.#store = new ManagedCertificates(db, secretBox, changes);
    this.#metrics = { orders: registerMetrics(registry, db) };
  }

  start(): void {
    // On SQLite this is the only process: leases a killed one left are nobody's (on PostgreSQL other
    // replicas may be alive, and their leases are left to expire).
    if (!(this.db.getExecutor().adapter instanceof PostgresAdapter)) {
      this.#released = this.#store
        .releaseAll()
        .catch((error: unknown) =>
          this.log.warn({ err: error }, 'ACME certificates: freeing stale leases failed'),
        );
    }
    this.changes.on('changed', this.#onChange);
    this.#timer = setInterval(() => this.#schedulePass(), this.settings.pollMs);
    this.#timer.unref();
    this.#schedulePass();
    this.log.info(
      { directoryUrl: this.settings.directoryUrl, challenges: this.settings.challenges },
      'ACME certificates: on',
    );
  }

  /** Stops looking, lets running jobs end (their leases are then given back). */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.changes.off('changed', this.#onChange);
    clearInterval(this.#timer);
    clearTimeout(this.#settleTimer);
    clearTimeout(this.#dueTimer);
    await this.#pass;
    await Promise.allSettled(this.#running.values());
    await this.#store
      .releaseAll(this.#owner)
      .catch((error: unknown) => this.log.warn({ err: error }, 'giving back ACME leases failed'));
  }

  readonly #onChange = (): void => {
    if (this.#stopped) return;
    clearTimeout(this.#settleTimer);
    this.#settleTimer = setTimeout(() => this.#schedulePass(), CHANGE_SETTLE_MS);
    this.#settleTimer.unref();
  };

  #schedulePass(): void {
    if (this.#stopped) return;
    if (this.#pass) {
      this.#passAgain = true;
      return;
    }
    this.#pass = this.#runPass()
      .catch((error: unknown) =>
        this.log.error({ err: error }, 'ACME certificates: the pass failed; next one in a while'),
      )
      .finally(() => {
        this.#pass = undefined;
        if (this.#passAgain) {
          this.#passAgain = false;
          this.#schedulePass();
        }
      });
  }

  /** Follows what the edges need, then starts the jobs due, up to the concurrency. */
  async #runPass(): Promise<void> {
    await this.#released;
    const { wanted, skipped } = await wantedCertificates(this.db, this.settings.domains);
    for (const { name, reason } of skipped) {
      if (this.#skippedLogged.has(name)) continue;
      this.#skippedLogged.add(name);
      this.log.warn(
        { name },
        `ACME certificates: ${name} is served with a self-signed certificate: ${reason}`,
      );
    }
    const now = this.now();
    const { added, removed } = await this.#store.follow(wanted, now);
    if (added.length > 0) this.log.info({ subjects: added }, 'ACME certificates: new names to certify');
    if (removed.length > 0)
      this.log.info(
        { subjects: removed },
        'ACME certificates: names no longer served; their certificates removed',
      );
    const leased = await this.#store.leaseDue(
      this.#owner,
      this.settings.concurrency - this.#running.size,
      this.settings.leaseMs,
      now,
    );
    for (const row of leased) {
      const job = this.#runJob(row).finally(() => {
        this.#running.delete(row.subject);
        // A slot is free: whatever else is due starts now, not at the next poll.
        this.#schedulePass();
      });
      this.#running.set(row.subject, job);
    }
    await this.#wakeAtNextDue();
  }

  /** Renewals and retries start on time, not at the next poll. */
  async #wakeAtNextDue(): Promise<void> {
    clearTimeout(this.#dueTimer);
    // With every slot taken, the end of a job looks again.
    if (this.#running.size >= this.settings.concurrency) return;
    const next = await this.#store.nextDue();
    if (next === undefined || this.#stopped) return;
    const delay = Math.min(Math.max(next.getTime() - this.now().getTime(), 0), this.settings.pollMs);
    if (delay >= this.settings.pollMs) return;
    this.#dueTimer = setTimeout(() => this.#schedulePass(), delay + 10);
    this.#dueTimer.unref();
  }

  async #runJob(row: ManagedRow): Promise<void> {
    const domains = JSON.parse(row.domains) as string[];
    const started = rfc3339(this.now());
    const renewal = row.certificate_id !== null;
    const update = (changes: Partial<ManagedRow>) => this.#store.update(row.subject, this.#owner, changes);
    // While a retry runs, what failed last stays in view (the spec's `msg`: status or error).
    const status = (msg: string) => (row.failures > 0 ? `${msg}; the last try failed: ${row.msg}` : msg);
    try {
      await update({
        job_started_at: row.job_started_at ?? started,
        msg: status(`${renewal ? 'renewing' : 'ordering'} a certificate from the CA`),
      });
      const issued = await withProblemRecorder(async () => {
        try {
          this.#client ??= acmeClient(this.db, this.secretBox, this.settings, this.log);
          const client = await this.#client.catch((error: unknown) => {
            this.#client = undefined;
            throw error;
          });
          return await runOrder({
            acme: await acmeModule(this.settings),
            client,
            domains,
            keyType: row.key_type,
            challengeTypes: this.settings.challenges,
            resumeOrderUrl: row.order_url,
            onOrder: (url) => update({ order_url: url }),
            publish: async (challenges) => {
              await this.#store.publish(row.subject, challenges, this.now());
              await new Promise((resolve) => setTimeout(resolve, PUBLISH_SETTLE_MS));
            },
            withdraw: () => this.#store.withdraw(row.subject),
            progress: (msg) => update({ msg: status(msg) }),
            note: (message) =>
              this.log.info(
                { subject: row.subject, domains },
                `ACME certificates: ${domains.join(', ')}: ${message}`,
              ),
          });
        } catch (error) {
          throw asOrderFailure(error);
        }
      });
      const stored = await this.#store.issued(row, this.#owner, issued, renewalTime, this.now());
      this.#metrics.orders.inc({ result: 'issued', error_code: '' });
      this.log.info(
        {
          subject: row.subject,
          domains,
          certificateId: stored.certificateId,
          notAfter: stored.notAfter,
          renewsAt: stored.renewsAt,
        },
        `ACME certificates: ${renewal ? 'renewed' : 'issued'} ${domains.join(', ')}`,
      );
    } catch (error) {
      const failure =
        error instanceof OrderFailure
          ? error
          : new OrderFailure(String(error), 'INTERNAL_ERROR', undefined, { cause: error });
      const failures = row.failures + 1;
      const retriesAt = retryTime(
        failures,
        this.now(),
        { minMs: this.settings.retryMinMs, maxMs: this.settings.retryMaxMs },
        failure.retryAfter,
      );
      this.#metrics.orders.inc({ result: 'failed', error_code: failure.code });
      const serving =
        row.not_after && Date.parse(row.not_after) > this.now().getTime()
          ? `; the current certificate is served until it expires at ${row.not_after}`
          : '';
      this.log.warn(
        {
          subject: row.subject,
          domains,
          errorCode: failure.code,
          failures,
          retriesAt: retriesAt.toISOString(),
          err: failure,
        },
        `ACME certificates: ${renewal ? 'renewing' : 'ordering'} ${domains.join(', ')} failed (${failure.message}); next try at ${rfc3339(retriesAt)}${serving}`,
      );
      await this.#store
        .update(row.subject, this.#owner, {
          failures,
          retries_at: rfc3339(retriesAt),
          error_code: failure.code,
          msg: failure.message,
          job_started_at: row.job_started_at ?? started,
          // A failed authorization fails its order: the next try starts a new one.
          ...(failure.code === 'DNS_ERROR' ? { order_url: null } : {}),
          lease_owner: null,
          lease_expires_at: null,
        })
        .catch((cause: unknown) =>
          this.log.error(
            { err: cause, subject: row.subject },
            'ACME certificates: recording a failure failed',
          ),
        );
    }
  }
}

function registerMetrics(registry: Registry, db: Db): Counter<'result' | 'error_code'> {
  new Gauge({
    name: 'edgeward_acme_certificates',
    help: 'Certificates the server manages by ACME, by state: valid, failing (the last try failed; a valid one may still be served) or pending (never issued)',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const rows = await db
        .selectFrom('managed_certificates')
        .select(['certificate_id', 'failures', 'not_after'])
        .execute();
      const now = new Date().toISOString();
      this.reset();
      this.set({ state: 'failing' }, rows.filter((row) => row.failures > 0).length);
      this.set(
        { state: 'pending' },
        rows.filter((row) => row.certificate_id === null && row.failures === 0).length,
      );
      this.set(
        { state: 'valid' },
        rows.filter((row) => row.failures === 0 && row.not_after !== null && row.not_after > now).length,
      );
    },
  });
  new Gauge({
    name: 'edgeward_acme_certificate_soonest_expiry_seconds',
    help: 'Seconds until the managed certificate closest to expiry expires (alert when renewals keep failing)',
    registers: [registry],
    async collect() {
      const row = await db
        .selectFrom('managed_certificates')
        .select((eb) => eb.fn.min('not_after').as('soonest'))
        .executeTakeFirst();
      this.reset();
      if (row?.soonest) this.set((Date.parse(String(row.soonest)) - Date.now()) / 1000);
    },
  });
  return new Counter({
    name: 'edgeward_acme_orders_total',
    help: 'ACME orders this process finished, by result (issued, failed) and error code (DNS_ERROR: the name owner must fix; INTERNAL_ERROR: retried)',
    labelNames: ['result', 'error_code'],
    registers: [registry],
  });
}
