import { API_GROUP, API_VERSION } from '../crds/common.js';
import type { KindDefinition } from '../crds/crd-definition.js';
import {
  agentIngressKind,
  botUserKind,
  certificateAuthorityKind,
  eventDestinationKind,
  eventSubscriptionKind,
  httpsEdgeKind,
  httpsEdgeRouteKind,
  ipPolicyKind,
  reservedAddressKind,
  sshCertificateAuthorityKind,
  sshCredentialKind,
  sshHostCertificateKind,
  sshUserCertificateKind,
  tcpEdgeKind,
  tlsCertificateKind,
  tlsEdgeKind,
  tunnelCredentialKind,
  tunnelKind,
} from '../crds/definitions/index.js';
import type { ResourceKind } from '../runtime/resource-types.js';

/** The runtime's view (group, version, plural) of a generated CRD kind. */
export function resourceKindOf(definition: KindDefinition): ResourceKind {
  return { group: API_GROUP, version: API_VERSION, kind: definition.kind, plural: definition.plural };
}

export const BOT_USER = resourceKindOf(botUserKind);
export const RESERVED_ADDRESS = resourceKindOf(reservedAddressKind);
export const TUNNEL_CREDENTIAL = resourceKindOf(tunnelCredentialKind);
export const IP_POLICY = resourceKindOf(ipPolicyKind);
export const TLS_EDGE = resourceKindOf(tlsEdgeKind);
export const CERTIFICATE_AUTHORITY = resourceKindOf(certificateAuthorityKind);
export const TCP_EDGE = resourceKindOf(tcpEdgeKind);
export const HTTPS_EDGE = resourceKindOf(httpsEdgeKind);
export const HTTPS_EDGE_ROUTE = resourceKindOf(httpsEdgeRouteKind);
export const SSH_CERTIFICATE_AUTHORITY = resourceKindOf(sshCertificateAuthorityKind);
export const SSH_CREDENTIAL = resourceKindOf(sshCredentialKind);
export const SSH_HOST_CERTIFICATE = resourceKindOf(sshHostCertificateKind);
export const SSH_USER_CERTIFICATE = resourceKindOf(sshUserCertificateKind);
export const TLS_CERTIFICATE = resourceKindOf(tlsCertificateKind);
export const EVENT_DESTINATION = resourceKindOf(eventDestinationKind);
export const EVENT_SUBSCRIPTION = resourceKindOf(eventSubscriptionKind);
export const AGENT_INGRESS = resourceKindOf(agentIngressKind);
export const TUNNEL = resourceKindOf(tunnelKind);
