import { z } from 'zod';

/**
 * What the control plane tells each `edgeward edge` process: everything the data plane needs to
 * authenticate agents and serve edges, pushed as a whole snapshot on every change (see
 * `server/data-plane/`). It carries secrets (private keys, token hashes), so it is served only to
 * callers holding the edge key, never to API keys, and an edge never logs it.
 *
 * Module fields are the API's stored write forms (ids, not refs), `null` when unset.
 */
export const EDGE_FEED_PATH = '/edge/v1/feed';
export const EDGE_SESSION_ROUTE = '/edge/v1/edges/:edge_id/sessions/:session_id';
export const EDGE_COMMAND_RESULT_ROUTE = '/edge/v1/commands/:command_id/result';
export const edgeSessionPath = (edgeId: string, sessionId: string) =>
  EDGE_SESSION_ROUTE.replace(':edge_id', encodeURIComponent(edgeId)).replace(
    ':session_id',
    encodeURIComponent(sessionId),
  );
export const edgeCommandResultPath = (commandId: string) =>
  EDGE_COMMAND_RESULT_ROUTE.replace(':command_id', encodeURIComponent(commandId));

const acl = z.array(z.string());
const moduleEnabled = { enabled: z.boolean() };

export const edgeBackendModule = z.object({ ...moduleEnabled, backend_id: z.string() }).nullable();
export const edgeIpRestrictionModule = z
  .object({ ...moduleEnabled, ip_policy_ids: z.array(z.string()) })
  .nullable();
export const edgeMutualTlsModule = z
  .object({ ...moduleEnabled, certificate_authority_ids: z.array(z.string()) })
  .nullable();
export const edgeTlsTerminationModule = z
  .object({
    ...moduleEnabled,
    /** Absent on HTTPS edges, which always terminate at the edge. */
    terminate_at: z.enum(['edge', 'upstream']).optional(),
    min_version: z.enum(['1.0', '1.1', '1.2', '1.3']).nullable().optional(),
  })
  .nullable();

/**
 * An HTTPS edge route. `modules` holds each set module's write form with its secrets opened (the
 * edge verifies webhooks and talks to identity providers with them); the edge parses each module
 * on its own, so one it cannot read disables its route (fail closed) rather than the whole feed.
 */
export const edgeHttpsRoute = z.object({
  id: z.string(),
  match_type: z.enum(['exact_path', 'path_prefix']),
  match: z.string(),
  modules: z.record(z.string(), z.unknown()),
});

/** A TCP or TLS edge's traffic policy, in the API's write form; the edge compiles it (fail closed). */
export const edgePolicyModule = z.unknown().nullable();

/** A pending ACME challenge (RFC 8555 §8.3, RFC 8737): the name it proves and what to answer. */
export const acmeChallenge = z.object({
  type: z.enum(['http-01', 'tls-alpn-01']),
  domain: z.string(),
  token: z.string(),
  key_authorization: z.string(),
});
export type AcmeChallenge = z.infer<typeof acmeChallenge>;

export const edgeConfig = z.object({
  /** Changes whenever anything below changes; an edge ignores a snapshot it already applied. */
  revision: z.string(),
  credentials: z.array(z.object({ id: z.string(), token_hash: z.string(), acl })),
  /** `fingerprint`: OpenSSH's `SHA256:<base64>` of the key's wire form, whatever format it was registered in. */
  ssh_credentials: z.array(z.object({ id: z.string(), fingerprint: z.string(), acl })),
  ip_policies: z.array(
    z.object({
      id: z.string(),
      rules: z.array(z.object({ action: z.enum(['allow', 'deny']), cidr: z.string() })),
    }),
  ),
  backends: z.array(z.object({ id: z.string(), labels: z.record(z.string(), z.string()) })),
  reserved_addrs: z.array(z.object({ id: z.string(), addr: z.string(), region: z.string() })),
  certificate_authorities: z.array(z.object({ id: z.string(), ca_pem: z.string() })),
  tls_certificates: z.array(
    z.object({
      id: z.string(),
      certificate_pem: z.string(),
      private_key_pem: z.string(),
      dns_names: z.array(z.string()),
    }),
  ),
  tcp_edges: z.array(
    z.object({
      id: z.string(),
      hostports: z.array(z.string()),
      backend: edgeBackendModule,
      ip_restriction: edgeIpRestrictionModule,
      policy: edgePolicyModule,
    }),
  ),
  tls_edges: z.array(
    z.object({
      id: z.string(),
      hostports: z.array(z.string()),
      backend: edgeBackendModule,
      ip_restriction: edgeIpRestrictionModule,
      mutual_tls: edgeMutualTlsModule,
      tls_termination: edgeTlsTerminationModule,
      policy: edgePolicyModule,
    }),
  ),
  https_edges: z.array(
    z.object({
      id: z.string(),
      hostports: z.array(z.string()),
      mutual_tls: edgeMutualTlsModule,
      tls_termination: edgeTlsTerminationModule,
      /** Oldest first, as the API lists them. */
      routes: z.array(edgeHttpsRoute),
    }),
  ),
  /**
   * The ACME challenges pending now: every edge answers each one, since the CA's validation may
   * reach any of them (HTTP-01 on the plain-HTTP listener, TLS-ALPN-01 on the SNI listener).
   * Absent from servers older than ACME.
   */
  acme_challenges: z.array(acmeChallenge).default([]),
  /**
   * The names agents dial through agent ingresses (their regional domains): the tunnel endpoint
   * serves a TLS certificate covering one (an ACME-issued or uploaded one) instead of its own.
   */
  agent_ingress_domains: z.array(z.string()).default([]),
});
export type EdgeConfig = z.infer<typeof edgeConfig>;
export type EdgeTcpEdge = EdgeConfig['tcp_edges'][number];
export type EdgeTlsEdge = EdgeConfig['tls_edges'][number];
export type EdgeHttpsEdge = EdgeConfig['https_edges'][number];
export type EdgeHttpsRoute = z.infer<typeof edgeHttpsRoute>;

/** A command for the agent of one session, relayed by the edge that holds it. */
export const edgeCommand = z.object({
  id: z.string(),
  session_id: z.string(),
  name: z.enum(['restart', 'stop', 'update']),
});
export type EdgeCommand = z.infer<typeof edgeCommand>;

/**
 * A live edge as the others see it: where agents and other edges reach it (null when it advertises
 * no address of its own) and the sessions it holds, so an edge without a session of a group can
 * pass a connection to one that has one.
 */
export const edgePeer = z.object({
  id: z.string(),
  region: z.string(),
  tunnel_addr: z.string().nullable(),
  relay_addr: z.string().nullable(),
  sessions: z.array(z.object({ id: z.string(), labels: z.record(z.string(), z.string()) })),
});
export type EdgePeer = z.infer<typeof edgePeer>;

/**
 * The feed's query: who the edge is and, from edges that relay (`peers=1`), the addresses it
 * advertises. Only an edge that asked for `peers` is sent them (older edges refuse unknown lines).
 */
export const EDGE_FEED_QUERY = {
  peers: 'peers',
  tunnelAddr: 'tunnel_addr',
  relayAddr: 'relay_addr',
} as const;

/** One line of the feed (NDJSON): a new snapshot, a command, the live edges, or a keep-alive. */
export const edgeFeedMessage = z.discriminatedUnion('type', [
  z.object({ type: z.literal('config'), config: edgeConfig }),
  z.object({ type: z.literal('command'), command: edgeCommand }),
  z.object({ type: z.literal('peers'), peers: z.array(edgePeer) }),
  z.object({ type: z.literal('ping') }),
]);
export type EdgeFeedMessage = z.infer<typeof edgeFeedMessage>;

/** What an edge reports for each session it holds (`PUT edgeSessionPath`). */
export const edgeSessionReport = z.strictObject({
  agent_version: z.string().min(1).max(64),
  credential_id: z.string().min(1).max(64),
  ip: z.string().min(1).max(64),
  os: z.string().min(1).max(64),
  metadata: z.string().max(4096).nullable(),
  region: z.string().min(1).max(16),
  started_at: z.string(),
  transport: z.enum(['svc/2', 'ssh']),
  labels: z.record(z.string().max(63), z.string().max(255)),
});
export type EdgeSessionReport = z.infer<typeof edgeSessionReport>;

/** The agent's answer to a command (`POST edgeCommandResultPath`). */
export const edgeCommandResult = z.union([
  z.strictObject({ ok: z.literal(true) }),
  z.strictObject({ ok: z.literal(false), error: z.string().min(1).max(1024) }),
]);
export type EdgeCommandResult = z.infer<typeof edgeCommandResult>;
