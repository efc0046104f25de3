import type { FastifyInstance } from 'fastify';
import { agentIngressRoutes } from './agent-ingresses.js';
import { apiKeyRoutes } from './api-keys.js';
import { botUserRoutes } from './bot-users.js';
import { certificateAuthorityRoutes } from './certificate-authorities.js';
import { credentialRoutes } from './credentials.js';
import { eventDestinationDeliveryRoutes } from './event-destination-delivery.js';
import { eventDestinationRoutes } from './event-destinations.js';
import { eventSourceRoutes } from './event-sources.js';
import { eventSubscriptionRoutes } from './event-subscriptions.js';
import { httpsEdgeRouteRoutes } from './https-edge-routes.js';
import { httpsEdgeRoutes } from './https-edges.js';
import { ipPolicyRoutes } from './ip-policies.js';
import { reservedAddrRoutes } from './reserved-addrs.js';
import { sshCertificateAuthorityRoutes } from './ssh-certificate-authorities.js';
import { sshCertificateRoutes } from './ssh-certificates.js';
import { sshCredentialRoutes } from './ssh-credentials.js';
import { tcpEdgeRoutes } from './tcp-edges.js';
import { tlsCertificateRoutes } from './tls-certificates.js';
import { tlsEdgeRoutes } from './tls-edges.js';
import { tunnelGroupBackendRoutes } from './tunnel-group-backends.js';
import { tunnelSessionRoutes } from './tunnel-sessions.js';

/** Every route family of the management API, in the order the spec lists them. */
export async function registerRoutes(app: FastifyInstance): Promise<void> {
  await app.register(agentIngressRoutes);
  await app.register(sshCertificateAuthorityRoutes);
  await app.register(sshCertificateRoutes);
  await app.register(sshCredentialRoutes);
  await app.register(credentialRoutes);
  await app.register(tunnelSessionRoutes);
  await app.register(tunnelGroupBackendRoutes);
  await app.register(ipPolicyRoutes);
  await app.register(reservedAddrRoutes);
  await app.register(botUserRoutes);
  await app.register(apiKeyRoutes);
  await app.register(certificateAuthorityRoutes);
  await app.register(tlsCertificateRoutes);
  await app.register(eventSubscriptionRoutes);
  await app.register(eventSourceRoutes);
  await app.register(eventDestinationRoutes);
  await app.register(eventDestinationDeliveryRoutes);
  await app.register(tlsEdgeRoutes);
  await app.register(httpsEdgeRoutes);
  await app.register(httpsEdgeRouteRoutes);
  await app.register(tcpEdgeRoutes);
}
