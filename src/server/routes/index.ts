import type { FastifyInstance } from 'fastify';
import { ipPolicyRoutes } from './ip-policies.js';

/** Every route family of the management API, in the order the spec lists them. */
export async function registerRoutes(app: FastifyInstance): Promise<void> {
  await app.register(ipPolicyRoutes);
}
