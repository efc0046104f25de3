import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { collectDefaultMetrics, Registry } from 'prom-client';

declare module 'fastify' {
  interface FastifyInstance {
    /** The server's Prometheus registry: parts of the server register their metrics here. */
    metrics: Registry;
  }
}

/**
 * `GET /metrics` in Prometheus text, without a key, like the probes: labels carry ids and
 * outcomes, never keys, tokens, ARNs or payloads. The process's own metrics (CPU, memory, event
 * loop) are included.
 */
export const metricsPlugin = fp(async (app: FastifyInstance) => {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'edgeward_server_' });
  app.decorate('metrics', registry);
  app.get('/metrics', { config: { public: true } }, async (_request, reply) => {
    reply.header('content-type', registry.contentType);
    return registry.metrics();
  });
});
