import type { Generated } from 'kysely';

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
  /** The edge process holding the session (see `edge_processes`). */
  edge_id: string;
  /** JSON object of the labels the session binds. */
  labels: string;
}

/** A connected `edgeward edge`; its sessions are listed while its lease is current. */
export interface EdgeProcessesTable {
  id: string;
  region: string;
  lease_expires_at: string;
  /** Where agents reach this edge directly (`host:port`), if it says. */
  tunnel_addr: string | null;
  /** Where other edges reach it to pass connections (`host:port`), if it relays. */
  relay_addr: string | null;
}

/** An ACME account of the server, per directory URL. */
export interface AcmeAccountsTable {
  directory_url: string;
  created_at: string;
  email: string;
  key_sealed: string;
  account_url: string | null;
}

/** A certificate the server obtains and renews by ACME (src/server/acme/). */
export interface ManagedCertificatesTable {
  /** Who wants it: `edge-host:<name>` or `agent-ingress:<id>`. */
  subject: string;
  created_at: string;
  /** JSON array of DNS names. */
  domains: string;
  key_type: 'rsa' | 'ecdsa';
  certificate_id: string | null;
  not_after: string | null;
  renews_at: string | null;
  retries_at: string | null;
  failures: number;
  error_code: 'DNS_ERROR' | 'INTERNAL_ERROR' | null;
  msg: string;
  job_started_at: string | null;
  order_url: string | null;
  lease_owner: string | null;
  lease_expires_at: string | null;
}

/** A pending ACME challenge: every edge answers it. */
export interface AcmeChallengesTable {
  token: string;
  subject: string;
  domain: string;
  type: 'http-01' | 'tls-alpn-01';
  key_authorization: string;
  created_at: string;
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
  edge_processes: EdgeProcessesTable;
  idempotency_keys: IdempotencyKeysTable;
  acme_accounts: AcmeAccountsTable;
  managed_certificates: ManagedCertificatesTable;
  acme_challenges: AcmeChallengesTable;
  certificate_authorities: CertificateAuthoritiesTable;
  tls_certificates: TlsCertificatesTable;
  ssh_certificate_authorities: SshCertificateAuthoritiesTable;
  ssh_host_certificates: SshCertificatesTable;
  ssh_user_certificates: SshCertificatesTable;
  agent_ingresses: AgentIngressesTable;
  tunnel_group_backends: TunnelGroupBackendsTable;
  tls_edges: EdgesTable;
  https_edges: EdgesTable;
  tcp_edges: EdgesTable;
  https_edge_routes: HttpsEdgeRoutesTable;
  edge_hostports: EdgeHostportsTable;
  events: EventsTable;
  event_deliveries: EventDeliveriesTable;
  event_destination_delivery: EventDestinationDeliveryTable;
}

export interface CertificateAuthoritiesTable extends Described {
  ca_pem: string;
  subject_common_name: string;
  not_before: string;
  not_after: string;
  /** JSON array. */
  key_usages: string;
  /** JSON array. */
  extended_key_usages: string;
}

export interface TlsCertificatesTable extends Described {
  certificate_pem: string;
  private_key_sealed: string;
  /** JSON object of every field derived from the leaf, as the API shows them. */
  derived: string;
}

export interface SshCertificateAuthoritiesTable extends Described {
  key_type: string;
  public_key: string;
  private_key_sealed: string;
}

export interface SshCertificatesTable extends Described {
  ssh_certificate_authority_id: string;
  public_key: string;
  key_type: string;
  /** JSON array. */
  principals: string;
  /** JSON object (user certificates only; `{}` for host certificates). */
  critical_options: string;
  /** JSON object (user certificates only; `{}` for host certificates). */
  extensions: string;
  valid_after: string;
  valid_until: string;
  certificate: string;
}

export interface AgentIngressesTable extends Described {
  domain: string;
  /** JSON array. */
  ns_targets: string;
  /** JSON array. */
  region_domains: string;
  /** JSON object or null. */
  certificate_management_policy: string | null;
  /** JSON object or null. */
  certificate_management_status: string | null;
}

export interface TunnelGroupBackendsTable extends Described {
  /** JSON object of label name -> value. */
  labels: string;
}

export interface EdgesTable extends Described {
  /** JSON array of `host:port`. */
  hostports: string;
  /** JSON object: module name -> stored write form. */
  modules: string;
}

export interface EdgeHostportsTable {
  hostport: string;
  edge_id: string;
}

export interface HttpsEdgeRoutesTable extends Described {
  edge_id: string;
  match_type: string;
  match: string;
  /** JSON object: module name -> stored write form. */
  modules: string;
}

export interface EventsTable {
  id: string;
  type: string;
  object_id: string;
  created_at: string;
  /** JSON `{object}`: the resource as the API showed it, one-time secrets removed; `{id}` for deletes. */
  payload: string;
  /** When the event was given its delivery rows (null: not yet). */
  routed_at: string | null;
}

export type DeliveryState = 'pending' | 'delivered' | 'undeliverable';

/** One event to one destination. */
export interface EventDeliveriesTable {
  /** Routing order: the order the destination receives its events. Generated by the database. */
  seq: Generated<number>;
  /** `evd_…`: the envelope's `id`, the same on every retry. */
  id: string;
  event_id: string;
  destination_id: string;
  state: DeliveryState;
  attempts: number;
  last_error: string | null;
  delivered_at: string | null;
}

/** A destination's retry schedule, health and delivery lease. Times are ISO 8601 with milliseconds. */
export interface EventDestinationDeliveryTable {
  destination_id: string;
  consecutive_failures: number;
  next_attempt_at: string | null;
  last_success_at: string | null;
  last_error: string | null;
  last_error_at: string | null;
  delivered_total: number;
  /** The dispatcher (one per server process) delivering to this destination now, until the lease expires. */
  lease_owner: string | null;
  lease_expires_at: string | null;
  last_turn_at: string | null;
}
