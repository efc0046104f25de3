import {
  AgentIngresses,
  ApiKeys,
  BotUsers,
  CertificateAuthorities,
  Credentials,
  EventDestinations,
  EventSubscriptions,
  HttpsEdgeRoutes,
  HttpsEdges,
  IpPolicies,
  IpPolicyRules,
  ReservedAddrs,
  SshCertificateAuthorities,
  SshCredentials,
  SshHostCertificates,
  SshUserCertificates,
  TcpEdges,
  TlsCertificates,
  TlsEdges,
  TunnelGroupBackends,
  TunnelSessions,
} from './resources.js';
import { type ClientOptions, Transport } from './transport.js';

/** Typed client of the edgeward management API. */
export class EdgewardClient {
  readonly transport: Transport;
  readonly agentIngresses: AgentIngresses;
  readonly credentials: Credentials;
  readonly sshCertificateAuthorities: SshCertificateAuthorities;
  readonly sshHostCertificates: SshHostCertificates;
  readonly sshUserCertificates: SshUserCertificates;
  readonly sshCredentials: SshCredentials;
  readonly tunnelSessions: TunnelSessions;
  readonly ipPolicies: IpPolicies;
  readonly ipPolicyRules: IpPolicyRules;
  readonly reservedAddrs: ReservedAddrs;
  readonly botUsers: BotUsers;
  readonly certificateAuthorities: CertificateAuthorities;
  readonly tlsCertificates: TlsCertificates;
  readonly apiKeys: ApiKeys;
  readonly eventDestinations: EventDestinations;
  readonly eventSubscriptions: EventSubscriptions;
  readonly tlsEdges: TlsEdges;
  readonly httpsEdges: HttpsEdges;
  readonly httpsEdgeRoutes: HttpsEdgeRoutes;
  readonly tcpEdges: TcpEdges;
  readonly tunnelGroupBackends: TunnelGroupBackends;

  constructor(options: ClientOptions) {
    this.transport = new Transport(options);
    this.agentIngresses = new AgentIngresses(this.transport);
    this.credentials = new Credentials(this.transport);
    this.sshCertificateAuthorities = new SshCertificateAuthorities(this.transport);
    this.sshHostCertificates = new SshHostCertificates(this.transport);
    this.sshUserCertificates = new SshUserCertificates(this.transport);
    this.sshCredentials = new SshCredentials(this.transport);
    this.tunnelSessions = new TunnelSessions(this.transport);
    this.ipPolicies = new IpPolicies(this.transport);
    this.ipPolicyRules = new IpPolicyRules(this.transport);
    this.reservedAddrs = new ReservedAddrs(this.transport);
    this.botUsers = new BotUsers(this.transport);
    this.certificateAuthorities = new CertificateAuthorities(this.transport);
    this.tlsCertificates = new TlsCertificates(this.transport);
    this.apiKeys = new ApiKeys(this.transport);
    this.eventDestinations = new EventDestinations(this.transport);
    this.eventSubscriptions = new EventSubscriptions(this.transport);
    this.tlsEdges = new TlsEdges(this.transport);
    this.httpsEdges = new HttpsEdges(this.transport);
    this.httpsEdgeRoutes = new HttpsEdgeRoutes(this.transport);
    this.tcpEdges = new TcpEdges(this.transport);
    this.tunnelGroupBackends = new TunnelGroupBackends(this.transport);
  }

  close(): Promise<void> {
    return this.transport.close();
  }
}

export type * from '../schemas/index.js';
export { Collection, type CreateOptions } from './collection.js';
export { EdgewardApiError, EdgewardTransportError } from './errors.js';
export type { ListPage, ListParams } from './paging.js';
export type { RetryOptions } from './retry-policy.js';
export type { ClientOptions, RequestOptions } from './transport.js';
