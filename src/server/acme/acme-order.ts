import type { Authorization, Order } from 'acme-client';
import type { AcmeChallenge } from '../../schemas/edge-config.js';
import type { AcmeClient, acmeModule } from './acme-account.js';
import { type CaProblem, caUnreachable, lastCaProblem } from './acme-problems.js';
import type { ChallengeType } from './acme-settings.js';

type AcmeModule = Awaited<ReturnType<typeof acmeModule>>;

/** The spec's error codes of a certificate job: what the user must fix, or what will be retried. */
export type JobErrorCode = 'DNS_ERROR' | 'INTERNAL_ERROR';

/** An order that did not give a certificate, with what the job's schedule needs to know. */
export class OrderFailure extends Error {
  constructor(
    message: string,
    readonly code: JobErrorCode,
    readonly retryAfter?: Date,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'OrderFailure';
  }
}

/**
 * Problem types (RFC 8555 §6.7) that only the owner of the name can mend: its DNS does not point
 * at the edges, a CAA record forbids the CA, or the CA refuses the name.
 */
const USER_MUST_FIX = new Set(['dns', 'caa', 'rejectedIdentifier', 'unsupportedIdentifier']);

export interface OrderJob {
  acme: AcmeModule;
  client: AcmeClient;
  domains: string[];
  keyType: 'rsa' | 'ecdsa';
  challengeTypes: readonly ChallengeType[];
  /** The order a previous attempt (maybe another replica's, before a restart) left pending. */
  resumeOrderUrl: string | null;
  /** Stores the order's URL before anything is asked of the edges, so a restart resumes it. */
  onOrder(url: string): Promise<void>;
  /** Puts the challenges in every edge's configuration; resolves once they were sent. */
  publish(challenges: AcmeChallenge[]): Promise<void>;
  /** Takes them out again, whatever the outcome. */
  withdraw(): Promise<void>;
  /** What the job is doing now, for the status users read. */
  progress(msg: string): Promise<void>;
  /** A step worth a line in the server's log (an order created or resumed). */
  note(message: string): void;
}

export interface IssuedCertificate {
  certificatePem: string;
  privateKeyPem: string;
}

/**
 * One ACME order, from a new (or resumed) order to the downloaded chain: every pending
 * authorization is proven by a challenge the edges answer, then a fresh key's CSR finalizes it.
 */
export async function runOrder(job: OrderJob): Promise<IssuedCertificate> {
  try {
    return await orderSteps(job);
  } catch (error) {
    throw asOrderFailure(error);
  }
}

async function orderSteps(job: OrderJob): Promise<IssuedCertificate> {
  const { client } = job;
  let order = job.resumeOrderUrl ? await resumable(client, job.resumeOrderUrl) : undefined;
  if (order) job.note(`resuming the order ${order.url} (${order.status})`);
  else {
    if (job.resumeOrderUrl) job.note(`the order ${job.resumeOrderUrl} cannot be taken further: a new order`);
    order = await client.createOrder({ identifiers: job.domains.map((value) => ({ type: 'dns', value })) });
    await job.onOrder(order.url);
    job.note(`new order ${order.url}`);
  }
  if (order.status === 'pending') await authorize(job, order);
  await job.progress('all names proven; finalizing the order');
  const key =
    job.keyType === 'ecdsa'
      ? await job.acme.crypto.createPrivateEcdsaKey('P-256')
      : await job.acme.crypto.createPrivateRsaKey(2048);
  const [, csr] = await job.acme.crypto.createCsr({ commonName: job.domains[0], altNames: job.domains }, key);
  const finalized = await client.finalizeOrder(order, csr);
  const valid = await client.waitForValidStatus(finalized);
  const certificatePem = await client.getCertificate(valid);
  return { certificatePem, privateKeyPem: key.toString() };
}

/** A stored order that can still be taken further; finalized or failed ones start over. */
async function resumable(client: AcmeClient, url: string): Promise<Order | undefined> {
  try {
    const order = await client.getOrder({ url } as Order);
    return order.status === 'pending' || order.status === 'ready' ? { ...order, url } : undefined;
  } catch {
    // Expired, unknown to a CA that lost its state, or unreachable: a new order says which.
    return undefined;
  }
}

async function authorize(job: OrderJob, order: Order): Promise<void> {
  const { client } = job;
  const authorizations = (await client.getAuthorizations(order)).filter(
    (authz) => authz.status === 'pending',
  );
  const chosen = authorizations.map((authz) => {
    const challenge = job.challengeTypes
      .map((type) => authz.challenges.find((offered) => offered.type === type))
      .find((offered) => offered !== undefined);
    if (!challenge) {
      const offered = authz.challenges.map((offered) => offered.type).join(', ');
      throw new OrderFailure(
        `the CA offers ${offered} for ${authz.identifier.value}; edges answer ${job.challengeTypes.join(' and ')}`,
        'DNS_ERROR',
      );
    }
    return { authz, challenge };
  });
  const published: AcmeChallenge[] = [];
  for (const { authz, challenge } of chosen) {
    published.push({
      type: challenge.type as ChallengeType,
      domain: authz.identifier.value,
      token: (challenge as { token: string }).token,
      key_authorization: await client.getChallengeKeyAuthorization(challenge),
    });
  }
  try {
    await job.publish(published);
    await job.progress(`proving ${published.map((c) => `${c.domain} (${c.type})`).join(', ')} to the CA`);
    for (const { challenge } of chosen) {
      if (challenge.status === 'pending') await client.completeChallenge(challenge);
    }
    for (const { authz } of chosen) await waitForAuthorization(client, order, authz);
  } finally {
    await job.withdraw();
  }
}

/** Waits for an authorization; a failed one is explained by its challenge's error (the CA's words). */
async function waitForAuthorization(client: AcmeClient, order: Order, authz: Authorization): Promise<void> {
  try {
    await client.waitForValidStatus(authz);
  } catch (cause) {
    const current = (await client.getAuthorizations(order).catch(() => [])).find(
      (candidate) => candidate.url === authz.url,
    );
    const problem = current?.challenges
      .map((challenge) => challenge.error)
      .find((error) => error !== undefined) as { type?: string; detail?: string } | undefined;
    if (!problem) throw cause;
    const type = (problem.type ?? '').replace('urn:ietf:params:acme:error:', '');
    // The CA could not prove the name leads to the edges (its DNS, a firewall, another server
    // answering): only the name's owner can mend that. A fault of the CA itself is retried as ours.
    throw new OrderFailure(
      `${authz.identifier.value}: ${problem.detail ?? type}`,
      type === 'serverInternal' ? 'INTERNAL_ERROR' : 'DNS_ERROR',
      undefined,
      { cause },
    );
  }
}

/**
 * Any failure as an `OrderFailure`: the CA's problem document when it sent one, else what broke.
 * Call it inside the job's `withProblemRecorder`.
 */
export function asOrderFailure(error: unknown): OrderFailure {
  if (error instanceof OrderFailure) return error;
  const unreachable = caUnreachable();
  if (unreachable)
    return new OrderFailure(`the CA could not be reached (${unreachable})`, 'INTERNAL_ERROR', undefined, {
      cause: error,
    });
  const problem: CaProblem | undefined = lastCaProblem();
  const message = error instanceof Error ? error.message : String(error);
  if (problem?.type === 'rateLimited')
    return new OrderFailure(
      `the CA's rate limit: ${problem.detail || message}`,
      'INTERNAL_ERROR',
      problem.retryAfter,
      {
        cause: error,
      },
    );
  if (problem && USER_MUST_FIX.has(problem.type))
    return new OrderFailure(problem.detail || message, 'DNS_ERROR', problem.retryAfter, { cause: error });
  return new OrderFailure(
    problem ? `the CA answered ${problem.status} ${problem.type}: ${problem.detail || message}` : message,
    'INTERNAL_ERROR',
    problem?.retryAfter,
    { cause: error },
  );
}
