import type { FastifyInstance } from 'fastify';
import { apiKeyRoutes } from './api-keys.js';
import { botUserRoutes } from './bot-users.js';
import { credentialRoutes } from './credentials.js';
import { eventDestinationRoutes } from './event-destinations.js';
import { eventSourceRoutes } from './event-sources.js';
import { eventSubscriptionRoutes } from './event-subscriptions.js';
import { ipPolicyRoutes } from './ip-policies.js';
import { reservedAddrRoutes } from './reserved-addrs.js';
import { sshCredentialRoutes } from './ssh-credentials.js';
import { tunnelSessionRoutes } from './tunnel-sessions.js';

/** Every route family of the management API, in the order the spec lists them. */
export async function registerRoutes(app: FastifyInstance): Promise<void> {
  await app.register(sshCredentialRoutes);
  await app.register(credentialRoutes);
  await app.register(tunnelSessionRoutes);
  await app.register(ipPolicyRoutes);
  await app.register(reservedAddrRoutes);
  await app.register(botUserRoutes);
  await app.register(apiKeyRoutes);
  await app.register(eventSubscriptionRoutes);
  await app.register(eventSourceRoutes);
  await app.register(eventDestinationRoutes);
}
