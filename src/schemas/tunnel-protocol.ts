import { z } from 'zod';

/**
 * The tunnel protocol between `edgeward agent` and `edgeward edge`: HTTP/2 (node:http2) over the TLS
 * connection the agent opens, with the roles reversed — the agent serves, the edge is the client —
 * so the edge can open a stream to the agent for every connection it carries, and HTTP/2 does the
 * multiplexing and flow control. Requests the edge sends to the agent:
 *
 * - `POST /edgeward/hello`: the agent answers with its `AgentHello` (credentials, labels, platform).
 * - `POST /edgeward/session`: the edge's verdict, a `SessionVerdict` (the session id, or why not).
 * - `POST /edgeward/connect`: one carried connection; the agent dials its forward target and
 *   answers 200 (then both directions are the stream's data) or 502 when the target refuses. The
 *   request headers `edgeward-source-ip` / `edgeward-source-port` name the public client, so the
 *   agent can log who it carries (absent when the edge cannot tell).
 * - `POST /edgeward/command`: an `AgentCommand` (restart, stop, update). The agent answers 204 when
 *   it accepts (and then acts: a stop or restart closes this connection right after the answer), or
 *   409 with a `CommandRefusal` whose message is meant for whoever asked. An agent that predates a
 *   command answers 404.
 *
 * Version 2 (ALPN `edgeward-tunnel/2`; an agent offers both and the edge picks) lets an agent hold
 * sessions on several edges at once (see docs/high-availability.md):
 * - the hello may name the edges the agent already holds a session on (`held_edge_ids`), and the
 *   verdict then names the edge (`edge_id`) and the other live edges (`edges`), or says that this
 *   edge is already held (`already_held`: no session is made, the agent tries another edge);
 * - `POST /edgeward/edges`: the edge tells the agent the live edges again whenever they change;
 * - an HTTP/2 GOAWAY from the edge means "this edge is draining": the agent opens its replacement
 *   session elsewhere, and the edge opens no new stream on this one.
 * Version 1 agents and edges keep working against version 2 peers: the extra fields exist only
 * when both sides chose version 2.
 */
export const TUNNEL_ALPN = 'edgeward-tunnel/1';
export const TUNNEL_ALPN_V2 = 'edgeward-tunnel/2';
/** What an edge accepts, newest first (the server's preference decides). */
export const TUNNEL_ALPNS = [TUNNEL_ALPN_V2, TUNNEL_ALPN];

/**
 * HTTP/2 flow-control windows of the tunnel, per stream and per connection. Node's default (64 KiB)
 * caps a stream's throughput at one window per round trip; 1 MiB roughly doubled it in
 * `bench/tunnel.mjs` and still bounds what one session buffers for a slow reader.
 */
export const TUNNEL_WINDOW_BYTES = 1 << 20;

export const TunnelPath = {
  hello: '/edgeward/hello',
  session: '/edgeward/session',
  connect: '/edgeward/connect',
  command: '/edgeward/command',
  /** Version 2: the live edges, whenever they change. */
  edges: '/edgeward/edges',
} as const;

/** Request headers of `POST /edgeward/connect` naming the public client. */
export const SourceHeader = {
  ip: 'edgeward-source-ip',
  port: 'edgeward-source-port',
} as const;

/** Label names an agent may bind (the same rule on both sides). */
export const LABEL_NAME = /^[A-Za-z0-9_.\-/]{1,63}$/;
export const METADATA_MAX_LENGTH = 4096;

export const agentHello = z.strictObject({
  authtoken: z.string().min(1).max(512),
  agent_version: z.string().min(1).max(64),
  os: z.string().min(1).max(64),
  metadata: z.string().max(METADATA_MAX_LENGTH).optional(),
  labels: z
    .record(z.string().regex(LABEL_NAME), z.string().max(255))
    .refine((labels) => Object.keys(labels).length <= 64, 'at most 64 labels'),
});
export type AgentHello = z.infer<typeof agentHello>;

const EDGE_ID = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/);

/** Version 2's hello: the edges this agent already holds a session on. */
export const agentHelloV2 = agentHello.extend({ held_edge_ids: z.array(EDGE_ID).max(64).optional() });
export type AgentHelloV2 = z.infer<typeof agentHelloV2>;

/** An edge an agent may hold a session on; `tunnel_addr` is null when it is reachable only through the shared address. */
export const liveEdge = z.strictObject({
  id: EDGE_ID,
  tunnel_addr: z.string().max(300).nullable(),
});
export type LiveEdge = z.infer<typeof liveEdge>;
export const liveEdges = z.strictObject({ edges: z.array(liveEdge).max(256) });

export const sessionVerdict = z.union([
  z.strictObject({ session_id: z.string().min(1) }),
  z.strictObject({ error: z.string().min(1) }),
]);
export type SessionVerdict = z.infer<typeof sessionVerdict>;

/** Version 2's verdict: the session (with the edge and the live edges), a refusal, or "you hold this edge already". */
export const sessionVerdictV2 = z.union([
  z.strictObject({ session_id: z.string().min(1), edge_id: EDGE_ID, edges: z.array(liveEdge).max(256) }),
  z.strictObject({ error: z.string().min(1) }),
  z.strictObject({ already_held: EDGE_ID }),
]);
export type SessionVerdictV2 = z.infer<typeof sessionVerdictV2>;

export const agentCommand = z.strictObject({ name: z.enum(['restart', 'stop', 'update']) });
export type AgentCommand = z.infer<typeof agentCommand>;

/** The body of a 409 (or 400) answer to a command. */
export const commandRefusal = z.object({ error: z.string().min(1).max(1024) });
export type CommandRefusal = z.infer<typeof commandRefusal>;

/** How each end of a tunnel session checks that the other still answers (all in ms). */
export interface SessionLivenessSettings {
  /** Each end pings the other this often: HTTP/2 PING, or SSH keepalives for OpenSSH sessions. */
  intervalMs: number;
  /**
   * The edge takes a session out of rotation (no new connection or request goes to it) once it has
   * heard nothing from the agent, neither a ping's answer nor any other byte, for `intervalMs +
   * overdueMs`; it comes back at the next sign of life.
   */
  overdueMs: number;
  /** Either end closes the session once it has heard nothing for `intervalMs + timeoutMs`. */
  timeoutMs: number;
}

/**
 * The defaults of both ends. A frozen agent (SIGSTOP, a laptop lid, a NAT that dropped the
 * connection) is out of rotation at most 9.5 s after its last sign of life and its session closed
 * at most 16.5 s after (the edge judges every 1.5 s); an agent whose edge froze reconnects at most
 * 17.5 s after it last heard from it (judged every 2.5 s). Flags and tests may change them.
 */
export const SESSION_LIVENESS: Readonly<SessionLivenessSettings> = {
  intervalMs: 5_000,
  overdueMs: 3_000,
  timeoutMs: 10_000,
};
