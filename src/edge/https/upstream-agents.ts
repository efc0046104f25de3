import http from 'node:http';
import type { Duplex } from 'node:stream';
import type { SessionPool } from '../routing/session-pool.js';
import type { TunnelSession } from '../routing/tunnel-session.js';

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
 *
 * A failed connection makes its session suspect, and a session out of rotation (suspect, overdue
 * with a ping's answer, or closed) has its idle connections dropped at once, before the failed
 * request is sent again (`https-front.ts` replays a GET whose kept-alive connection failed): the
 * replay goes to another session's connection, or to a new one the pool opens on another session.
 */
class TunnelGroupAgent extends http.Agent {
  /** The session each connection of this agent is a stream of. */
  readonly #sessionOf = new WeakMap<Duplex, TunnelSession>();
  /** Streams through another edge's relay. */
  readonly #relayed = new WeakSet<Duplex>();

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
    this.pool.open(this.labels, POOLED_SOURCE).then(
      ({ stream, session }) => {
        this.#track(stream, session);
        // Node's agent calls `ref()` on a socket it hands out again; a tunnel stream holds nothing
        // open that the edge's own connections do not.
        const socket = writeBuffersOnly(stream) as Duplex & { ref?: () => unknown };
        socket.ref ??= () => socket;
        callback?.(null, socket);
      },
      (error: unknown) =>
        callback?.(error instanceof Error ? error : new Error(String(error)), undefined as never),
    );
    return undefined;
  }

  // A tunnel stream is no TCP socket: no keep-alive probes to set, nothing to ref or unref. An idle
  // timeout closes it while it waits in the pool. A stream of a session out of rotation is not kept.
  // Nor is a stream through another edge's relay: it is the fallback path, and kept idle it would
  // hold that edge's drain open until its timeout.
  override keepSocketAlive(socket: Duplex): boolean {
    if (this.#relayed.has(socket)) return false;
    if (this.#sessionOf.get(socket)?.inRotation === false) return false;
    (socket as Duplex & { setTimeout?(ms: number): void }).setTimeout?.(IDLE_MS);
    return true;
  }

  // Node's own part marks the request as sent on a reused connection (which is what lets
  // `https-front.ts` replay a GET whose kept-alive connection failed) and takes off the listeners it
  // put on the idle socket.
  override reuseSocket(socket: Duplex, request: http.ClientRequest): void {
    (socket as Duplex & { setTimeout?(ms: number): void }).setTimeout?.(0);
    super.reuseSocket(socket, request);
  }

  /**
   * Notes the stream's session. Its listeners come before any request's (they are added first), so
   * by the time a request hears that its connection failed, the session is out of rotation and its
   * idle connections are gone from this agent.
   */
  #track(stream: Duplex, session: TunnelSession | undefined): void {
    // A stream another edge's session carries (relayed) is that edge's to watch.
    if (!session) {
      this.#relayed.add(stream);
      return;
    }
    this.#sessionOf.set(stream, session);
    stream.on('error', (error: Error) => {
      session.markSuspect(`an upstream connection failed: ${error.message}`);
      this.dropIdle(session);
    });
    stream.once('close', () => {
      // The session's connection is gone; its `closed` event may come a moment later.
      if (session.closed) this.dropIdle(session);
    });
  }

  /**
   * Takes the session's idle connections out of the free lists and closes them. Out of the lists at
   * once: Node's agent hands out the newest free socket without checking that it is still open.
   */
  dropIdle(session: TunnelSession): void {
    for (const sockets of Object.values(this.freeSockets)) {
      if (!sockets) continue;
      for (let index = sockets.length - 1; index >= 0; index--) {
        const socket = sockets[index];
        if (!socket || this.#sessionOf.get(socket) !== session) continue;
        sockets.splice(index, 1);
        socket.destroy();
      }
    }
  }
}

/**
 * One keep-alive agent per tunnel group (backend labels), dropped when no route uses the group. A
 * session that leaves rotation or closes loses its idle connections in every group.
 */
export class UpstreamAgents {
  #agents = new Map<string, TunnelGroupAgent>();
  readonly #onOutOfRotation = (session: TunnelSession) => {
    for (const agent of this.#agents.values()) agent.dropIdle(session);
  };

  constructor(private readonly pool: SessionPool) {
    pool.on('outOfRotation', this.#onOutOfRotation);
  }

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
    this.pool.off('outOfRotation', this.#onOutOfRotation);
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
