import type { ApiKey, ApiKeyCreate, ApiKeyUpdate } from '../schemas/api-keys.js';
import type { BotUser, BotUserCreate, BotUserUpdate } from '../schemas/bot-users.js';
import type { Credential, CredentialCreate, CredentialUpdate } from '../schemas/credentials.js';
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
  IpPolicy,
  IpPolicyCreate,
  IpPolicyRule,
  IpPolicyRuleCreate,
  IpPolicyRuleUpdate,
  IpPolicyUpdate,
} from '../schemas/ip-policies.js';
import type { ReservedAddr, ReservedAddrCreate, ReservedAddrUpdate } from '../schemas/reserved-addrs.js';
import type { SshCredential, SshCredentialCreate, SshCredentialUpdate } from '../schemas/ssh-credentials.js';
import type { TunnelSession } from '../schemas/tunnel-sessions.js';
import { Collection } from './collection.js';
import { iteratePages, type ListPage, type ListParams } from './paging.js';
import type { Transport } from './transport.js';

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
}

/** Tunnel credentials: `token` is only in the value `create` resolves to. */
export class Credentials extends Collection<'credentials', Credential, CredentialCreate, CredentialUpdate> {
  constructor(transport: Transport) {
    super(transport, '/credentials', 'credentials');
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

  listSources(subscriptionId: string): Promise<EventSourceList> {
    return this.transport.send('GET', this.sourcesPath(subscriptionId));
  }

  addSource(subscriptionId: string, type: string): Promise<EventSource> {
    return this.transport.send('POST', this.sourcesPath(subscriptionId), { body: { type } });
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
