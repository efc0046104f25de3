import type { z } from 'zod';
import type { AgentIngress, AgentIngressCreate, AgentIngressUpdate } from '../schemas/agent-ingresses.js';
import type { ApiKey, ApiKeyCreate, ApiKeyUpdate } from '../schemas/api-keys.js';
import type { BotUser, BotUserCreate, BotUserUpdate } from '../schemas/bot-users.js';
import type {
  CertificateAuthority,
  CertificateAuthorityCreate,
  CertificateAuthorityUpdate,
} from '../schemas/certificate-authorities.js';
import type { Credential, CredentialCreate, CredentialUpdate } from '../schemas/credentials.js';
import type {
  BackendModule,
  backendModuleInput,
  IpRestrictionModule,
  ipRestrictionModuleInput,
  MutualTlsModule,
  mutualTlsModuleInput,
  PolicyModule,
  policyModuleInput,
  TlsTerminationModule,
  tlsTerminationModuleInput,
} from '../schemas/edge-modules.js';
import type {
  EventDestination,
  EventDestinationCreate,
  EventDestinationUpdate,
} from '../schemas/event-destinations.js';
import type {
  EventSource,
  EventSourceList,
  EventSubscription,
  EventSubscriptionCreate,
  EventSubscriptionUpdate,
} from '../schemas/event-subscriptions.js';
import type {
  HttpsEdgeRoute,
  HttpsEdgeRouteCreate,
  HttpsEdgeRouteUpdate,
} from '../schemas/https-edge-routes.js';
import type { HttpsEdge, HttpsEdgeCreate, HttpsEdgeUpdate } from '../schemas/https-edges.js';
import type {
  IpPolicy,
  IpPolicyCreate,
  IpPolicyRule,
  IpPolicyRuleCreate,
  IpPolicyRuleUpdate,
  IpPolicyUpdate,
} from '../schemas/ip-policies.js';
import type { ReservedAddr, ReservedAddrCreate, ReservedAddrUpdate } from '../schemas/reserved-addrs.js';
import type {
  CircuitBreakerModule,
  CompressionModule,
  circuitBreakerModuleInput,
  compressionModuleInput,
  OAuthModule,
  OidcModule,
  oauthModuleInput,
  oidcModuleInput,
  RequestHeadersModule,
  ResponseHeadersModule,
  requestHeadersModuleInput,
  responseHeadersModuleInput,
  SamlModule,
  samlModuleInput,
  UserAgentFilterModule,
  userAgentFilterModuleInput,
  WebhookVerificationModule,
  WebsocketTcpConverterModule,
  webhookVerificationModuleInput,
  websocketTcpConverterModuleInput,
} from '../schemas/route-modules.js';
import type {
  SshCertificateAuthority,
  SshCertificateAuthorityCreate,
  SshCertificateAuthorityUpdate,
} from '../schemas/ssh-certificate-authorities.js';
import type {
  SshHostCertificate,
  SshHostCertificateCreate,
  SshHostCertificateUpdate,
  SshUserCertificate,
  SshUserCertificateCreate,
  SshUserCertificateUpdate,
} from '../schemas/ssh-certificates.js';
import type { SshCredential, SshCredentialCreate, SshCredentialUpdate } from '../schemas/ssh-credentials.js';
import type { TcpEdge, TcpEdgeCreate, TcpEdgeUpdate } from '../schemas/tcp-edges.js';
import type {
  TlsCertificate,
  TlsCertificateCreate,
  TlsCertificateUpdate,
} from '../schemas/tls-certificates.js';
import type { TlsEdge, TlsEdgeCreate, TlsEdgeUpdate } from '../schemas/tls-edges.js';
import type {
  TunnelGroupBackend,
  TunnelGroupBackendCreate,
  TunnelGroupBackendUpdate,
} from '../schemas/tunnel-group-backends.js';
import type { TunnelSession } from '../schemas/tunnel-sessions.js';
import { Collection, type CreateOptions } from './collection.js';
import { CollectionWithModules, ModuleClient } from './modules.js';
import { iteratePages, type ListPage, type ListParams } from './paging.js';
import type { Transport } from './transport.js';

/** Agent ingresses: `domain` is fixed at creation; `uri` is relative (`/agent_ingresses/<id>`). */
export class AgentIngresses extends Collection<
  'ingresses',
  AgentIngress,
  AgentIngressCreate,
  AgentIngressUpdate
> {
  constructor(transport: Transport) {
    super(transport, '/agent_ingresses', 'ingresses');
  }
}

/** Tunnel-group backends (`/backends/tunnel_group`): `labels` on update replaces the whole set. */
export class TunnelGroupBackends extends Collection<
  'backends',
  TunnelGroupBackend,
  TunnelGroupBackendCreate,
  TunnelGroupBackendUpdate
> {
  constructor(transport: Transport) {
    super(transport, '/backends/tunnel_group', 'backends');
  }
}

export class IpPolicies extends Collection<'ip_policies', IpPolicy, IpPolicyCreate, IpPolicyUpdate> {
  constructor(transport: Transport) {
    super(transport, '/ip_policies', 'ip_policies');
  }
}

export class IpPolicyRules extends Collection<
  'ip_policy_rules',
  IpPolicyRule,
  IpPolicyRuleCreate,
  IpPolicyRuleUpdate
> {
  constructor(transport: Transport) {
    super(transport, '/ip_policy_rules', 'ip_policy_rules');
  }

  /** The rules of one policy only (`?ip_policy_id=`), every page. */
  iterateOfPolicy(ipPolicyId: string): AsyncGenerator<IpPolicyRule, void, undefined> {
    return this.iterate({ filters: { ip_policy_id: ipPolicyId } });
  }
}

/** Tunnel credentials: `token` is only in the value `create` resolves to. */
export class Credentials extends Collection<'credentials', Credential, CredentialCreate, CredentialUpdate> {
  constructor(transport: Transport) {
    super(transport, '/credentials', 'credentials');
  }
}

/** SSH certificate authorities: the key pair is generated by the server; the private key never leaves it. */
export class SshCertificateAuthorities extends Collection<
  'ssh_certificate_authorities',
  SshCertificateAuthority,
  SshCertificateAuthorityCreate,
  SshCertificateAuthorityUpdate
> {
  constructor(transport: Transport) {
    super(transport, '/ssh_certificate_authorities', 'ssh_certificate_authorities');
  }
}

/** SSH host certificates: `create` signs a host key; `certificate` is the `-cert.pub` line. */
export class SshHostCertificates extends Collection<
  'ssh_host_certificates',
  SshHostCertificate,
  SshHostCertificateCreate,
  SshHostCertificateUpdate
> {
  constructor(transport: Transport) {
    super(transport, '/ssh_host_certificates', 'ssh_host_certificates');
  }
}

/** SSH user certificates: `create` signs a user key; `certificate` is the `-cert.pub` line. */
export class SshUserCertificates extends Collection<
  'ssh_user_certificates',
  SshUserCertificate,
  SshUserCertificateCreate,
  SshUserCertificateUpdate
> {
  constructor(transport: Transport) {
    super(transport, '/ssh_user_certificates', 'ssh_user_certificates');
  }
}

export class SshCredentials extends Collection<
  'ssh_credentials',
  SshCredential,
  SshCredentialCreate,
  SshCredentialUpdate
> {
  constructor(transport: Transport) {
    super(transport, '/ssh_credentials', 'ssh_credentials');
  }
}

export class ReservedAddrs extends Collection<
  'reserved_addrs',
  ReservedAddr,
  ReservedAddrCreate,
  ReservedAddrUpdate
> {
  constructor(transport: Transport) {
    super(transport, '/reserved_addrs', 'reserved_addrs');
  }
}

export class BotUsers extends Collection<'bot_users', BotUser, BotUserCreate, BotUserUpdate> {
  constructor(transport: Transport) {
    super(transport, '/bot_users', 'bot_users');
  }
}

/** Uploaded CA certificates; `update` changes only description and metadata. */
export class CertificateAuthorities extends Collection<
  'certificate_authorities',
  CertificateAuthority,
  CertificateAuthorityCreate,
  CertificateAuthorityUpdate
> {
  constructor(transport: Transport) {
    super(transport, '/certificate_authorities', 'certificate_authorities');
  }
}

/** Uploaded certificate chains: `private_key_pem` is sent on create and never comes back. */
export class TlsCertificates extends Collection<
  'tls_certificates',
  TlsCertificate,
  TlsCertificateCreate,
  TlsCertificateUpdate
> {
  constructor(transport: Transport) {
    super(transport, '/tls_certificates', 'tls_certificates');
  }
}

/** API keys of users and bots: `token` is only in the value `create` resolves to. */
export class ApiKeys extends Collection<'api_keys', ApiKey, ApiKeyCreate, ApiKeyUpdate> {
  constructor(transport: Transport) {
    super(transport, '/api_keys', 'api_keys');
  }
}

export class EventDestinations extends Collection<
  'event_destinations',
  EventDestination,
  EventDestinationCreate,
  EventDestinationUpdate
> {
  constructor(transport: Transport) {
    super(transport, '/event_destinations', 'event_destinations');
  }
}

export class EventSubscriptions extends Collection<
  'event_subscriptions',
  EventSubscription,
  EventSubscriptionCreate,
  EventSubscriptionUpdate
> {
  constructor(transport: Transport) {
    super(transport, '/event_subscriptions', 'event_subscriptions');
  }

  /** In the order the sources were added; `beforeId` is the last type of the previous page. */
  listSources(subscriptionId: string, params: ListParams = {}): Promise<EventSourceList> {
    return this.transport.send('GET', this.sourcesPath(subscriptionId), {
      query: { limit: params.limit, before_id: params.beforeId },
    });
  }

  addSource(subscriptionId: string, type: string, options: CreateOptions = {}): Promise<EventSource> {
    return this.transport.send('POST', this.sourcesPath(subscriptionId), { body: { type }, ...options });
  }

  getSource(subscriptionId: string, type: string): Promise<EventSource> {
    return this.transport.send('GET', `${this.sourcesPath(subscriptionId)}/${encodeURIComponent(type)}`);
  }

  async removeSource(subscriptionId: string, type: string): Promise<void> {
    await this.transport.send('DELETE', `${this.sourcesPath(subscriptionId)}/${encodeURIComponent(type)}`);
  }

  private sourcesPath(subscriptionId: string): string {
    return `${this.itemPath(subscriptionId)}/sources`;
  }
}

/** Online agent sessions: read-only, plus the three agent commands. */
export class TunnelSessions {
  readonly path = '/tunnel_sessions';

  constructor(private readonly transport: Transport) {}

  get(id: string): Promise<TunnelSession> {
    return this.transport.send('GET', `${this.path}/${encodeURIComponent(id)}`);
  }

  list(params: ListParams = {}): Promise<ListPage<'tunnel_sessions', TunnelSession>> {
    return this.transport.send('GET', this.path, {
      query: { limit: params.limit, before_id: params.beforeId },
    });
  }

  iterate(params: ListParams = {}): AsyncGenerator<TunnelSession, void, undefined> {
    return iteratePages<'tunnel_sessions', TunnelSession>(
      this.transport,
      this.path,
      'tunnel_sessions',
      params,
    );
  }

  /** The agent re-execs itself and reconnects under a new session id (not on Windows). */
  restart(id: string): Promise<void> {
    return this.command(id, 'restart');
  }

  stop(id: string): Promise<void> {
    return this.command(id, 'stop');
  }

  /** Updates within the same major version; wait at least 10 s before a restart. */
  update(id: string): Promise<void> {
    return this.command(id, 'update');
  }

  private async command(id: string, name: 'restart' | 'stop' | 'update'): Promise<void> {
    await this.transport.send('POST', `${this.path}/${encodeURIComponent(id)}/${name}`, { body: {} });
  }
}

export type TlsEdgeModules = {
  backend: [z.input<typeof backendModuleInput>, BackendModule];
  ip_restriction: [z.input<typeof ipRestrictionModuleInput>, IpRestrictionModule];
  mutual_tls: [z.input<typeof mutualTlsModuleInput>, MutualTlsModule];
  tls_termination: [z.input<typeof tlsTerminationModuleInput>, TlsTerminationModule];
  policy: [z.input<typeof policyModuleInput>, PolicyModule];
};

export class TlsEdges extends CollectionWithModules<
  'tls_edges',
  TlsEdge,
  TlsEdgeCreate,
  TlsEdgeUpdate,
  TlsEdgeModules
> {
  constructor(transport: Transport) {
    super(transport, '/edges/tls', 'tls_edges');
  }
}

export type TcpEdgeModules = Pick<TlsEdgeModules, 'backend' | 'ip_restriction' | 'policy'>;

export class TcpEdges extends CollectionWithModules<
  'tcp_edges',
  TcpEdge,
  TcpEdgeCreate,
  TcpEdgeUpdate,
  TcpEdgeModules
> {
  constructor(transport: Transport) {
    super(transport, '/edges/tcp', 'tcp_edges');
  }
}

export type HttpsEdgeModules = Pick<TlsEdgeModules, 'mutual_tls'> & {
  /** HTTPS edges always terminate at the edge: the body has no `terminate_at`. */
  tls_termination: [Omit<z.input<typeof tlsTerminationModuleInput>, 'terminate_at'>, TlsTerminationModule];
};

/** HTTPS edges: `routes` in the read form lists every route; routes are managed with `HttpsEdgeRoutes`. */
export class HttpsEdges extends CollectionWithModules<
  'https_edges',
  HttpsEdge,
  HttpsEdgeCreate,
  HttpsEdgeUpdate,
  HttpsEdgeModules
> {
  constructor(transport: Transport) {
    super(transport, '/edges/https', 'https_edges');
  }
}

export type HttpsEdgeRouteModules = Pick<TlsEdgeModules, 'backend' | 'ip_restriction' | 'policy'> & {
  circuit_breaker: [z.input<typeof circuitBreakerModuleInput>, CircuitBreakerModule];
  compression: [z.input<typeof compressionModuleInput>, CompressionModule];
  request_headers: [z.input<typeof requestHeadersModuleInput>, RequestHeadersModule];
  response_headers: [z.input<typeof responseHeadersModuleInput>, ResponseHeadersModule];
  webhook_verification: [z.input<typeof webhookVerificationModuleInput>, WebhookVerificationModule];
  oauth: [z.input<typeof oauthModuleInput>, OAuthModule];
  saml: [z.input<typeof samlModuleInput>, SamlModule];
  oidc: [z.input<typeof oidcModuleInput>, OidcModule];
  websocket_tcp_converter: [z.input<typeof websocketTcpConverterModuleInput>, WebsocketTcpConverterModule];
  user_agent_filter: [z.input<typeof userAgentFilterModuleInput>, UserAgentFilterModule];
};

/** Routes of an HTTPS edge (`/edges/https/{edge_id}/routes`): every method takes the edge id first. */
export class HttpsEdgeRoutes {
  readonly #modules: ModuleClient<HttpsEdgeRouteModules>;

  constructor(private readonly transport: Transport) {
    this.#modules = new ModuleClient(transport);
  }

  create(edgeId: string, body: HttpsEdgeRouteCreate, options: CreateOptions = {}): Promise<HttpsEdgeRoute> {
    return this.transport.send('POST', this.routesPath(edgeId), { body, ...options });
  }

  get(edgeId: string, id: string): Promise<HttpsEdgeRoute> {
    return this.transport.send('GET', this.routePath(edgeId, id));
  }

  update(edgeId: string, id: string, body: HttpsEdgeRouteUpdate): Promise<HttpsEdgeRoute> {
    return this.transport.send('PATCH', this.routePath(edgeId, id), { body });
  }

  async delete(edgeId: string, id: string): Promise<void> {
    await this.transport.send('DELETE', this.routePath(edgeId, id));
  }

  /** One page, newest first; follow `next_page_uri` with `iterate` instead of by hand. */
  list(edgeId: string, params: ListParams = {}): Promise<ListPage<'routes', HttpsEdgeRoute>> {
    return this.transport.send('GET', this.routesPath(edgeId), {
      query: { limit: params.limit, before_id: params.beforeId },
    });
  }

  iterate(edgeId: string, params: ListParams = {}): AsyncGenerator<HttpsEdgeRoute, void, undefined> {
    return iteratePages<'routes', HttpsEdgeRoute>(this.transport, this.routesPath(edgeId), 'routes', params);
  }

  replaceModule<N extends keyof HttpsEdgeRouteModules>(
    edgeId: string,
    id: string,
    name: N,
    body: HttpsEdgeRouteModules[N][0],
  ): Promise<HttpsEdgeRouteModules[N][1]> {
    return this.#modules.replace(this.routePath(edgeId, id), name, body);
  }

  getModule<N extends keyof HttpsEdgeRouteModules>(
    edgeId: string,
    id: string,
    name: N,
  ): Promise<HttpsEdgeRouteModules[N][1]> {
    return this.#modules.get(this.routePath(edgeId, id), name);
  }

  deleteModule(edgeId: string, id: string, name: keyof HttpsEdgeRouteModules): Promise<void> {
    return this.#modules.delete(this.routePath(edgeId, id), name);
  }

  private routesPath(edgeId: string): string {
    return `/edges/https/${encodeURIComponent(edgeId)}/routes`;
  }

  private routePath(edgeId: string, id: string): string {
    return `${this.routesPath(edgeId)}/${encodeURIComponent(id)}`;
  }
}
