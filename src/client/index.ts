import {
  ApiKeys,
  BotUsers,
  Credentials,
  EventDestinations,
  EventSubscriptions,
  IpPolicies,
  IpPolicyRules,
  ReservedAddrs,
  SshCredentials,
  TunnelSessions,
} from './resources.js';
import { type ClientOptions, Transport } from './transport.js';

/** Typed client of the edgeward management API. */
export class EdgewardClient {
  readonly transport: Transport;
  readonly credentials: Credentials;
  readonly sshCredentials: SshCredentials;
  readonly tunnelSessions: TunnelSessions;
  readonly ipPolicies: IpPolicies;
  readonly ipPolicyRules: IpPolicyRules;
  readonly reservedAddrs: ReservedAddrs;
  readonly botUsers: BotUsers;
  readonly apiKeys: ApiKeys;
  readonly eventDestinations: EventDestinations;
  readonly eventSubscriptions: EventSubscriptions;

  constructor(options: ClientOptions) {
    this.transport = new Transport(options);
    this.credentials = new Credentials(this.transport);
    this.sshCredentials = new SshCredentials(this.transport);
    this.tunnelSessions = new TunnelSessions(this.transport);
    this.ipPolicies = new IpPolicies(this.transport);
    this.ipPolicyRules = new IpPolicyRules(this.transport);
    this.reservedAddrs = new ReservedAddrs(this.transport);
    this.botUsers = new BotUsers(this.transport);
    this.apiKeys = new ApiKeys(this.transport);
    this.eventDestinations = new EventDestinations(this.transport);
    this.eventSubscriptions = new EventSubscriptions(this.transport);
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
