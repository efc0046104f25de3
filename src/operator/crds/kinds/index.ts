import type { KindDefinition } from '../kind.js';
import { agentIngressKind } from './agent-ingress.js';
import { botUserKind } from './bot-user.js';
import { certificateAuthorityKind } from './certificate-authority.js';
import { eventDestinationKind } from './event-destination.js';
import { eventSubscriptionKind } from './event-subscription.js';
import { httpsEdgeKind } from './https-edge.js';
import { httpsEdgeRouteKind } from './https-edge-route.js';
import { ipPolicyKind } from './ip-policy.js';
import { reservedAddressKind } from './reserved-address.js';
import { sshCertificateAuthorityKind } from './ssh-certificate-authority.js';
import { sshCredentialKind } from './ssh-credential.js';
import { sshHostCertificateKind } from './ssh-host-certificate.js';
import { sshUserCertificateKind } from './ssh-user-certificate.js';
import { tcpEdgeKind } from './tcp-edge.js';
import { tlsCertificateKind } from './tls-certificate.js';
import { tlsEdgeKind } from './tls-edge.js';
import { tunnelCredentialKind } from './tunnel-credential.js';

export * from './agent-ingress.js';
export * from './bot-user.js';
export * from './certificate-authority.js';
export * from './event-destination.js';
export * from './event-subscription.js';
export * from './https-edge.js';
export * from './https-edge-route.js';
export * from './ip-policy.js';
export * from './reserved-address.js';
export * from './ssh-certificate-authority.js';
export * from './ssh-credential.js';
export * from './ssh-host-certificate.js';
export * from './ssh-user-certificate.js';
export * from './tcp-edge.js';
export * from './tls-certificate.js';
export * from './tls-edge.js';
export * from './tunnel-credential.js';

/** Every kind of the operator, in the order DESIGN.md lists them. */
export const ALL_KINDS: readonly KindDefinition[] = [
  agentIngressKind,
  sshCertificateAuthorityKind,
  sshHostCertificateKind,
  sshUserCertificateKind,
  sshCredentialKind,
  tunnelCredentialKind,
  tlsEdgeKind,
  httpsEdgeKind,
  httpsEdgeRouteKind,
  tcpEdgeKind,
  ipPolicyKind,
  reservedAddressKind,
  botUserKind,
  certificateAuthorityKind,
  tlsCertificateKind,
  eventSubscriptionKind,
  eventDestinationKind,
];
