import type { SecretBox } from '../../crypto/secret-box.js';
import { rfc3339 } from '../../lib/rfc3339.js';
import { ApiError } from '../errors/api-error.js';
import type { Db } from '../store/database.js';
import { isUniqueViolation } from '../store/unique-violation.js';
import { inWriteTransaction } from '../store/write-transaction.js';

/** Idempotency keys are honoured for 24 hours, like most APIs that offer them. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * What makes two requests "the same": method, route, path parameters and the validated body. Keyed
 * (HMAC), because a body may carry a private key and even its plain hash should not be stored.
 */
export function requestFingerprint(
  secretBox: SecretBox,
  method: string,
  url: string,
  params: unknown,
  body: unknown,
): string {
  return secretBox.mac(`${method} ${url}\n${JSON.stringify(params)}\n${JSON.stringify(body)}`);
}

export interface IdempotentRun {
  db: Db;
  principalId: string;
  secretBox: SecretBox;
  key: string;
  fingerprint: string;
  status: number;
  /** The route's work, inside the transaction that also records its response. */
  run(trx: Db): Promise<unknown>;
}

export interface IdempotentOutcome {
  replayed: boolean;
  status: number;
  payload: unknown;
}

/**
 * Runs a create once per (caller, Idempotency-Key): the first run records its response in the same
 * transaction as the change; a retry with the same request gets that response back, a different
 * request with the same key a 409. A failed run records nothing, so a corrected retry works.
 */
export async function runIdempotent(options: IdempotentRun): Promise<IdempotentOutcome> {
  const attempt = () => inWriteTransaction(options.db, (trx) => attemptOnce(options, trx));
  // Two concurrent requests with one key can both miss the lookup; on PostgreSQL the loser is
  // usually retried as a serialization failure, but its insert may instead violate the key's primary
  // key. Running again then finds the winner's response and replays it, so the caller sees one
  // resource either way.
  return attempt().catch((error: unknown) => {
    if (isUniqueViolation(error)) return attempt();
    throw error;
  });
}

async function attemptOnce(options: IdempotentRun, trx: Db): Promise<IdempotentOutcome> {
  const { principalId, key, fingerprint, secretBox } = options;
  const context = `idempotency:${principalId}:${key}`;
  const found = await trx
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('principal_id', '=', principalId)
    .where('idempotency_key', '=', key)
    .executeTakeFirst();
  // Keys are honoured for 24 hours whether or not the hourly sweep has run yet.
  const expired =
    found !== undefined && found.created_at < rfc3339(new Date(Date.now() - IDEMPOTENCY_TTL_MS));
  if (expired) {
    await trx
      .deleteFrom('idempotency_keys')
      .where('principal_id', '=', principalId)
      .where('idempotency_key', '=', key)
      .execute();
  }
  const previous = expired ? undefined : found;
  if (previous) {
    const payload = JSON.parse(secretBox.open(previous.response_sealed, context)) as unknown;
    if (previous.fingerprint !== fingerprint) {
      // Its id (never the rest: it may hold a one-time token) lets a caller whose first answer was
      // lost, and whose inputs changed since, find what it made instead of making a second one.
      const madeId = idOf(payload);
      throw new ApiError(
        'ERR_EDGEWARD_500',
        `Idempotency-Key: already used with a different request${madeId ? `, which made ${madeId}` : ''}; use a new key for a new request`,
        madeId ? { details: { resource_id: madeId } } : undefined,
      );
    }
    return { replayed: true, status: previous.status_code, payload };
  }
  const payload = await options.run(trx);
  await trx
    .insertInto('idempotency_keys')
    .values({
      principal_id: principalId,
      idempotency_key: key,
      fingerprint,
      status_code: options.status,
      // The response may hold a one-time secret (a credential's token): sealed, never plain.
      response_sealed: secretBox.seal(JSON.stringify(payload ?? null), context),
      created_at: rfc3339(),
    })
    .execute();
  return { replayed: false, status: options.status, payload };
}

function idOf(payload: unknown): string | undefined {
  if (typeof payload !== 'object' || payload === null || !('id' in payload)) return undefined;
  return typeof payload.id === 'string' ? payload.id : undefined;
}
