import type { ClientOptions } from '../../client/transport.js';
import type { OperatorMetrics } from './metrics.js';
import type { RateLimiter } from './rate-limiter.js';

type ResponseInfo = Parameters<NonNullable<ClientOptions['onResponse']>>[0];

export interface ClientInstrumentation {
  /** Every edgeward API attempt waits for a token (flag: --api-qps / --api-burst). */
  limiter?: RateLimiter;
  /** Counts requests as `edgeward_operator_api_requests_total{api="edgeward",method,code}`. */
  metrics?: OperatorMetrics;
  /** How long a 429 pauses the limiter when no Retry-After is known. Default 1 s. */
  defaultPauseMs?: number;
  /** Aborts every request, including one waiting for the limiter (the manager's work signal). */
  signal?: AbortSignal;
}

/**
 * Options for the edgeward `EdgewardClient` with the operator's rate limiter and metrics wired
 * into its `beforeRequest` / `onResponse` hooks (keeping any hooks already in `base`). A 429
 * pauses the shared limiter, so every reconcile backs off, not only the one that was refused;
 * the transport's own retry honours the Retry-After of that request.
 */
export function instrumentedClientOptions(
  base: ClientOptions,
  instrumentation: ClientInstrumentation,
): ClientOptions {
  const { limiter, metrics } = instrumentation;
  const pauseMs = instrumentation.defaultPauseMs ?? 1000;
  return {
    ...base,
    ...(instrumentation.signal ? { signal: instrumentation.signal } : {}),
    beforeRequest: async (info) => {
      await base.beforeRequest?.(info);
      await limiter?.acquire(info.signal);
    },
    onResponse: (info: ResponseInfo) => {
      base.onResponse?.(info);
      metrics?.apiRequest('edgeward', info.method, info.statusCode);
      if (info.statusCode === 429) limiter?.pause(info.retryAfterMs ?? pauseMs);
    },
  };
}
