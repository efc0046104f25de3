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
 */
export const TUNNEL_ALPN = 'edgeward-tunnel/1';

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

export const sessionVerdict = z.union([
  z.strictObject({ session_id: z.string().min(1) }),
  z.strictObject({ error: z.string().min(1) }),
]);
export type SessionVerdict = z.infer<typeof sessionVerdict>;

export const agentCommand = z.strictObject({ name: z.enum(['restart', 'stop', 'update']) });
export type AgentCommand = z.infer<typeof agentCommand>;

/** The body of a 409 (or 400) answer to a command. */
export const commandRefusal = z.object({ error: z.string().min(1).max(1024) });
export type CommandRefusal = z.infer<typeof commandRefusal>;
