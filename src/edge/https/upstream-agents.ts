import http from 'node:http';
import type { Duplex } from 'node:stream';
import type { SessionPool } from '../routing/session-pool.js';

/** How long an idle upstream connection is kept: under the 5 s keep-alive Node servers default to. */
const IDLE_MS = 4_000;
/** Idle upstream connections kept per tunnel group. */
const MAX_IDLE = 64;

/**
 * The source an upstream connection is opened with: pooled connections carry many clients' requests,
 * so the agent is told no client (X-Forwarded-For names each request's).
 */
const POOLED_SOURCE = { ip: '0.0.0.0', port: 0 };

/**
 * Keep-alive HTTP/1.1 connections to the services behind a tunnel group, each one a stream of an
 * agent's tunnel connection. Reusing them saves a stream round trip to the agent and a TCP
 * connect by the agent on every request. New connections are spread over the group's sessions by
 * the session pool; a connection whose session goes away closes and leaves the pool.
 */
class TunnelGroupAgent extends http.Agent {
  constructor(
    private readonly pool: SessionPool,
    private readonly labels: Readonly<Record<string, string>>,
  ) {
    super({ keepAlive: true, maxFreeSockets: MAX_IDLE, scheduling: 'lifo' });
  }

  override createConnection(
    _options: http.ClientRequestArgs,
    callback?: (error: Error | null, stream: Duplex) => void,
  ): Duplex | null | undefined {
    this.pool.connect(this.labels, POOLED_SOURCE).then(
      (stream) => callback?.(null, writeBuffersOnly(stream)),
      (error: unknown) =>
        callback?.(error instanceof Error ? error : new Error(String(error)), undefined as never),
    );
    return undefined;
  }

  // A tunnel stream is no TCP socket: no keep-alive probes to set, nothing to ref or unref. An idle
  // timeout closes it while it waits in the pool.
  override keepSocketAlive(socket: Duplex): boolean {
    (socket as Duplex & { setTimeout?(ms: number): void }).setTimeout?.(IDLE_MS);
    return true;
  }

  override reuseSocket(socket: Duplex): void {
    (socket as Duplex & { setTimeout?(ms: number): void }).setTimeout?.(0);
  }
}

/** One keep-alive agent per tunnel group (backend labels), dropped when no route uses the group. */
export class UpstreamAgents {
  #agents = new Map<string, TunnelGroupAgent>();

  constructor(private readonly pool: SessionPool) {}

  for(labels: Readonly<Record<string, string>>): http.Agent {
    const key = groupKey(labels);
    let agent = this.#agents.get(key);
    if (!agent) {
      agent = new TunnelGroupAgent(this.pool, labels);
      this.#agents.set(key, agent);
    }
    return agent;
  }

  /** Keeps the agents of `groups`, closing the idle connections of the others. */
  retain(groups: Iterable<Readonly<Record<string, string>>>): void {
    const kept = new Set([...groups].map(groupKey));
    for (const [key, agent] of this.#agents) {
      if (kept.has(key)) continue;
      agent.destroy();
      this.#agents.delete(key);
    }
  }

  destroy(): void {
    for (const agent of this.#agents.values()) agent.destroy();
    this.#agents.clear();
  }
}

function groupKey(labels: Readonly<Record<string, string>>): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * The tunnel stream (an HTTP/2 stream to the agent) gets Buffers only. Node 20's Http2Stream loses
 * string chunks written in one batch (`_writev`): their bytes are freed before they are sent, so
 * the service got garbage in place of the first bytes of the request line whenever the request
 * head (a string, from http.request) went out together with body bytes.
 */
export function writeBuffersOnly(stream: Duplex): Duplex {
  // Node's own name for a chunk that is a Buffer; not one of the BufferEncoding string encodings.
  const BUFFER = 'buffer' as BufferEncoding;
  const asBuffer = (chunk: unknown, encoding: BufferEncoding) =>
    typeof chunk === 'string'
      ? { chunk: Buffer.from(chunk, encoding), encoding: BUFFER }
      : { chunk, encoding };
  const write = stream._write.bind(stream);
  stream._write = (chunk, encoding, callback) => {
    const converted = asBuffer(chunk, encoding);
    write(converted.chunk, converted.encoding, callback);
  };
  const writev = stream._writev?.bind(stream);
  if (writev) {
    stream._writev = (chunks, callback) =>
      writev(
        chunks.map(({ chunk, encoding }) => asBuffer(chunk, encoding)),
        callback,
      );
  }
  return stream;
}
