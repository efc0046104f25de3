import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '../errors/api-error.js';

export const DEFAULT_RATE_LIMIT_PER_MINUTE = 12_000;

/**
 * Per-caller request budget: 429 with `Retry-After` past `perMinute` requests in a minute.
 * It runs after authentication so the budget belongs to the API key's owner, not to an address
 * that many callers may share; unauthenticated requests were already refused with a cheap 401.
 */
export const rateLimitPlugin = fp(async (app: FastifyInstance, options: { perMinute: number }) => {
  if (options.perMinute <= 0) return;
  await app.register(rateLimit, {
    global: true,
    hook: 'preHandler',
    max: options.perMinute,
    timeWindow: 60_000,
    keyGenerator: (request) => request.principal?.id ?? request.ip,
    allowList: (request) => request.routeOptions.config.public === true,
    errorResponseBuilder: (_request, context) =>
      new ApiError(
        'ERR_EDGEWARD_700',
        `rate limit of ${context.max} requests per minute exceeded; retry in ${context.after}`,
      ),
  });
});
