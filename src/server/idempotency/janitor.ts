import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { rfc3339 } from '../../lib/rfc3339.js';
import type { Db } from '../store/database.js';
import { IDEMPOTENCY_TTL_MS } from './idempotency.js';

const SWEEP_EVERY_MS = 60 * 60 * 1000;

export async function sweepIdempotencyKeys(db: Db, now: number = Date.now()): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('created_at', '<', rfc3339(new Date(now - IDEMPOTENCY_TTL_MS)))
    .execute();
}

export const idempotencyJanitor = fp(async (app: FastifyInstance, options: { db: Db }) => {
  const timer = setInterval(() => {
    sweepIdempotencyKeys(options.db).catch((err: unknown) =>
      app.log.error({ err }, 'sweeping expired idempotency keys failed'),
    );
  }, SWEEP_EVERY_MS);
  timer.unref();
  app.addHook('onClose', async () => clearInterval(timer));
});
