import type { EdgewardClient } from '../client/index.js';
import { registerAgentIngress } from './controllers/agent-ingress/register.js';
import { registerBotUser } from './controllers/bot-user/register.js';
import { registerCertificateAuthority } from './controllers/certificate-authority/register.js';
import { registerEventDestination } from './controllers/event-destination/register.js';
import { registerEventSubscription } from './controllers/event-subscription/register.js';
import type { GatewayApiDiscovery } from './controllers/gateway-class/discovery.js';
import { registerGatewayClass } from './controllers/gateway-class/register.js';
import { registerHttpsEdge } from './controllers/https-edge/register.js';
import { registerHttpsEdgeRoute } from './controllers/https-edge-route/register.js';
import { OWNED_KINDS, registerIngress } from './controllers/ingress/register.js';
import type { IngressSettings } from './controllers/ingress/status-address.js';
import { registerIpPolicy } from './controllers/ip-policy/register.js';
import { registerReservedAddress } from './controllers/reserved-address/register.js';
import { registerSshCertificateAuthority } from './controllers/ssh-certificate-authority/register.js';
import { registerSshCredential } from './controllers/ssh-credential/register.js';
import { registerSshHostCertificate } from './controllers/ssh-host-certificate/register.js';
import { registerSshUserCertificate } from './controllers/ssh-user-certificate/register.js';
import { registerTcpEdge } from './controllers/tcp-edge/register.js';
import { registerTlsCertificate } from './controllers/tls-certificate/register.js';
import { registerTlsEdge } from './controllers/tls-edge/register.js';
import { registerTunnel } from './controllers/tunnel/register.js';
import type { TunnelEdgeSettings } from './controllers/tunnel/settings.js';
import { registerTunnelCredential } from './controllers/tunnel-credential/register.js';
import type { KindDefinition } from './crds/crd-definition.js';
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
} from './crds/definitions/index.js';
import type { PolicyRule } from './rbac.js';
import type { Manager } from './runtime/manager.js';

/** What `edgeward operator` passes its controllers beyond the manager and the API client. */
export interface OperatorSettings {
  /** Where Tunnel agents dial (`--edge-addr`, `--edge-ca`, `--edge-server-name`). */
  edge?: TunnelEdgeSettings;
  /** What Ingresses' status says (`--ingress-status-address`). */
  ingress?: IngressSettings;
  /** What the operator found of the Gateway API at start; the GatewayClass controller runs if served. */
  gatewayApi?: GatewayApiDiscovery;
}

/** One kind of the operator: its CRD, its controller, and what its controller needs from RBAC. */
export interface OperatorKind {
  /** The CRD's schema, names and printer columns (`crds/definitions/<kind>.ts`). */
  definition: KindDefinition;
  /** Registers the kind's controller (`controllers/<kind>/register.ts`) with the manager. */
  register(manager: Manager, api: EdgewardClient, settings: OperatorSettings): unknown;
  /**
   * Writes Secrets it owns (a token, a certificate): the owner reference's blockOwnerDeletion needs
   * `update` on the kind's `finalizers` subresource where OwnerReferencesPermissionEnforcement runs.
   */
  ownsSecrets?: boolean;
  /** Other resources its controller reads (RBAC rules of their own, with why). */
  reads?: readonly PolicyRule[];
  /**
   * Its controller never puts the edgeward finalizer on (a deleted Tunnel's agent just stops), so
   * the admission policy that adds it at create (`admission/finalizer-policy.ts`) leaves it alone:
   * nothing would ever take it off.
   */
  withoutFinalizer?: true;
}

/**
 * Every kind, agent-facing kinds first and event kinds last: the one table a new kind is added to. The
 * operator's wiring, the CRDs (`npm run crds`) and the RBAC rules of `config/rbac/role.yaml` and
 * the Helm chart are generated from it; a test fails when a generated file is stale.
 */
export const OPERATOR_KINDS: readonly OperatorKind[] = [
  { definition: agentIngressKind, register: registerAgentIngress },
  { definition: sshCertificateAuthorityKind, register: registerSshCertificateAuthority },
  { definition: sshHostCertificateKind, register: registerSshHostCertificate, ownsSecrets: true },
  { definition: sshUserCertificateKind, register: registerSshUserCertificate, ownsSecrets: true },
  { definition: sshCredentialKind, register: registerSshCredential },
  { definition: tunnelCredentialKind, register: registerTunnelCredential, ownsSecrets: true },
  {
    definition: tunnelKind,
    register: registerTunnel,
    withoutFinalizer: true,
    reads: [
      {
        why: "Services (list/watch: an informer): a Tunnel's forward.service names one; its ports, and its clusterIP when it has no EndpointSlice. Read only.",
        apiGroups: [''],
        resources: ['services'],
        verbs: ['list', 'watch'],
      },
      {
        why: 'EndpointSlices (list/watch: an informer of those labelled kubernetes.io/service-name): a Tunnel carries connections to a ready endpoint of its Service; a changed endpoint is dialed by the next connection. Read only.',
        apiGroups: ['discovery.k8s.io'],
        resources: ['endpointslices'],
        verbs: ['list', 'watch'],
      },
    ],
  },
  { definition: tlsEdgeKind, register: registerTlsEdge },
  { definition: httpsEdgeKind, register: registerHttpsEdge },
  { definition: httpsEdgeRouteKind, register: registerHttpsEdgeRoute },
  { definition: tcpEdgeKind, register: registerTcpEdge },
  { definition: ipPolicyKind, register: registerIpPolicy },
  { definition: reservedAddressKind, register: registerReservedAddress },
  { definition: botUserKind, register: registerBotUser },
  { definition: certificateAuthorityKind, register: registerCertificateAuthority },
  { definition: tlsCertificateKind, register: registerTlsCertificate },
  { definition: eventSubscriptionKind, register: registerEventSubscription },
  { definition: eventDestinationKind, register: registerEventDestination },
];

/** What the Ingress controller needs of RBAC beyond the edgeward kinds' own rules. */
const INGRESS_RULES: readonly PolicyRule[] = [
  {
    why: 'Ingresses (list/watch: an informer) of the IngressClass edgeward, each made into an HTTPSEdge, its routes and Tunnels. Read only (but for the next rule).',
    apiGroups: ['networking.k8s.io'],
    resources: ['ingresses'],
    verbs: ['list', 'watch'],
  },
  {
    why: 'The status of an Ingress: status.loadBalancer.ingress (update of the status subresource); finalizers: the CRs an Ingress owns carry an ownerReference with blockOwnerDeletion, which OwnerReferencesPermissionEnforcement allows only to a client that may update the finalizers of the owner.',
    apiGroups: ['networking.k8s.io'],
    resources: ['ingresses/status', 'ingresses/finalizers'],
    verbs: ['update'],
  },
  {
    why: 'The CRs an Ingress of the class edgeward becomes (owned by it, so the garbage collector deletes them with it): created, replaced when the Ingress changes, deleted when a rule or path goes or the Ingress does (also where no garbage collector runs). The only spec writes of the operator.',
    apiGroups: ['edgeward.dev'],
    resources: OWNED_KINDS.map((kind) => kind.plural).sort(),
    verbs: ['create', 'update', 'delete'],
  },
];

/** What the GatewayClass controller needs of RBAC (cluster-scoped kinds: a ClusterRole grants them). */
const GATEWAY_CLASS_RULES: readonly PolicyRule[] = [
  {
    why: 'GatewayClasses (get/list/watch: an informer, probed at start with a list) whose controllerName is edgeward.dev/gateway-controller. Read only (but for the next rule).',
    apiGroups: ['gateway.networking.k8s.io'],
    resources: ['gatewayclasses'],
    verbs: ['get', 'list', 'watch'],
  },
  {
    why: 'The status of our GatewayClasses: the Accepted and SupportedVersion conditions (update of the status subresource; patch for a merge of conditions).',
    apiGroups: ['gateway.networking.k8s.io'],
    resources: ['gatewayclasses/status'],
    verbs: ['patch', 'update'],
  },
  {
    why: 'The installed Gateway API release: the bundle-version annotation of the GatewayClass CRD, read once at start (SupportedVersion). RBAC rules here carry no resourceNames: get of any CRD, read only.',
    apiGroups: ['apiextensions.k8s.io'],
    resources: ['customresourcedefinitions'],
    verbs: ['get'],
  },
];

/**
 * A controller of a kind the operator does not define (Kubernetes' own): how it is registered and
 * the RBAC rules it needs (with why), added to those of the kinds.
 */
export interface OperatorController {
  name: string;
  register(manager: Manager, api: EdgewardClient, settings: OperatorSettings): unknown;
  rules: readonly PolicyRule[];
}

/** The controllers of Kubernetes kinds: the table such a controller is added to. */
export const OPERATOR_CONTROLLERS: readonly OperatorController[] = [
  // Ingresses of the IngressClass edgeward -> the HTTPSEdge, routes and Tunnels they own.
  { name: 'ingress', register: registerIngress, rules: INGRESS_RULES },
  // GatewayClasses of controllerName edgeward.dev/gateway-controller -> Accepted (when served at start).
  { name: 'gateway-class', register: registerGatewayClass, rules: GATEWAY_CLASS_RULES },
];

/** The CRD definitions of every kind, for the generator. */
export const KIND_DEFINITIONS: readonly KindDefinition[] = OPERATOR_KINDS.map((kind) => kind.definition);
