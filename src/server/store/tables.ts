/** Row types of every table, as Kysely sees them. Lists and maps are stored as JSON text. */

interface Described {
  id: string;
  created_at: string;
  description: string;
  metadata: string;
}

export interface UsersTable {
  id: string;
  created_at: string;
  name: string;
  is_admin: number;
}

export interface ApiKeysTable extends Described {
  owner_id: string;
  token_hash: string;
}

export interface BotUsersTable {
  id: string;
  created_at: string;
  name: string;
  active: number;
}

export interface CredentialsTable extends Described {
  owner_id: string;
  acl: string;
  token_hash: string;
}

export interface SshCredentialsTable extends Described {
  owner_id: string;
  acl: string;
  public_key: string;
  fingerprint: string;
}

export type IpPoliciesTable = Described;

export interface IpPolicyRulesTable extends Described {
  ip_policy_id: string;
  cidr: string;
  action: string;
}

export interface ReservedAddrsTable extends Described {
  region: string;
  addr: string;
  endpoint_configuration_id: string | null;
}

export interface EventDestinationsTable extends Described {
  format: string;
  /** The whole target, secrets included, sealed with the server's secret box. */
  target_sealed: string;
}

export interface EventSubscriptionsTable extends Described {
  /** JSON array of event types, in the order given. */
  source_types: string;
  /** JSON array of event destination ids, in the order given. */
  destination_ids: string;
}

export interface TunnelSessionsTable {
  id: string;
  started_at: string;
  agent_version: string;
  credential_id: string;
  ip: string;
  metadata: string | null;
  os: string;
  region: string;
  transport: string;
}

export interface IdempotencyKeysTable {
  principal_id: string;
  idempotency_key: string;
  fingerprint: string;
  status_code: number;
  response_sealed: string;
  created_at: string;
}

export interface Database {
  users: UsersTable;
  api_keys: ApiKeysTable;
  bot_users: BotUsersTable;
  credentials: CredentialsTable;
  ssh_credentials: SshCredentialsTable;
  ip_policies: IpPoliciesTable;
  ip_policy_rules: IpPolicyRulesTable;
  reserved_addrs: ReservedAddrsTable;
  event_destinations: EventDestinationsTable;
  event_subscriptions: EventSubscriptionsTable;
  tunnel_sessions: TunnelSessionsTable;
  idempotency_keys: IdempotencyKeysTable;
}
