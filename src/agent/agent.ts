import { lookup } from 'node:dns/promises';
import { EventEmitter } from 'node:events';
import type { ServerHttp2Stream } from 'node:http2';
import { isIP } from 'node:net';
import { pipeline } from 'node:stream';
import { joinHostPort } from '../lib/listen-address.js';
import {
  type AgentCommand,
  type AgentHelloV2,
  agentCommand,
  type LiveEdge,
  type SessionLivenessSettings,
} from '../schemas/tunnel-protocol.js';
import type { EdgeCa } from './edge-ca.js';
import { type CarriedSource, EdgeLink, readJson } from './edge-link.js';
import { dialTarget, type ForwardTarget } from './forward-target.js';
import { watchEdgeLiveness } from './liveness.js';
import { DEFAULT_HA_CONNECTIONS, parseEdgeAddr } from './options.js';
import { reconnectDelayMs } from './reconnect.js';
import { type StagedRelease, UpdateRefused, Updater, type UpdaterOptions } from './update.js';

export interface AgentOptions {
  /** `host:port` of the edge's tunnel endpoint. */
  edgeAddr: string;
  authtoken: string;
  labels: Record<string, string>;
  forward: ForwardTarget;
  metadata?: string;
  agentVersion: string;
  /**
   * PEM of the CA that signed the edge's certificate, or a function giving the current one, asked
   * at each dial (a CA file followed as it changes: the next connection trusts the new CA, the
   * sessions up stay); the system's CAs when absent.
   */
  ca?: EdgeCa;
  /** The name the edge's certificate is checked against; the edge's host by default. */
  serverName?: string;
  /**
   * What a `restart` command does. `reconnect` (the default, for library use): close the connection
   * and dial again at once, a new session under a new id, in this process (a staged update stays
   * staged). `exit`: close the connection, stop, and settle `done` with `restart` so the embedding
   * program re-execs itself (what the `edgeward agent` CLI does).
   */
  restart?: 'reconnect' | 'exit';
  /** Where updates come from; without a directory no update is ever available. */
  update?: Omit<UpdaterOptions, 'currentVersion'>;
  /** The platform the agent reports and whose rules it follows (`process.platform` by default). */
  platform?: NodeJS.Platform;
  /** On how many edges at most to hold a session at once (default `DEFAULT_HA_CONNECTIONS`). */
  haConnections?: number;
  /** From dialing an edge to its verdict, before the connection is given up (default 30 s). */
  verdictTimeoutMs?: number;
  /** Every address a name resolves to (default: the system resolver, `dns.lookup` with `all`). */
  resolveHost?: (host: string) => Promise<string[]>;
  /** How the agent pings each edge and when it gives up on one (`SESSION_LIVENESS` by default). */
  liveness?: Partial<SessionLivenessSettings>;
}

/** Why an agent run ended (`done`). */
export type AgentEnd =
  /** `stop()` was called. */
  | { reason: 'stopped' }
  /** The edge sent a `stop` command: the agent is to exit. */
  | { reason: 'stop-command' }
  /** The edge refused the session; retrying with the same token and labels would not help. */
  | { reason: 'refused'; message: string }
  /** A `restart` command with `restart: 'exit'`: run again, the staged release if one is. */
  | { reason: 'restart'; staged: StagedRelease | undefined };

export type UpdateEvent =
  | { state: 'updating'; version: string }
  | { state: 'updated'; staged: StagedRelease }
  | { state: 'failed'; version: string; error: string };

export type { CarriedSource } from './edge-link.js';

type AgentEvents = {
  /** A session opened; its id is what the API lists. */
  session: [id: string];
  /** The edge refused the session (a bad token, a bind the ACL does not allow). */
  refused: [reason: string];
  /** The agent holds no session any more; it reconnects after `delayMs` unless stopped. */
  disconnected: [reason: string, delayMs: number];
  /** One session ended (others may carry on). */
  sessionClosed: [id: string, reason: string];
  /** An edge is draining the session: a replacement is being dialed elsewhere. */
  draining: [id: string | undefined];
  /** One edge refused while the agent holds sessions on others: that edge is left alone for a while. */
  edgeRefused: [reason: string];
  /** One public connection: carried to the forward target, or the target could not be reached. */
  connection: [source: CarriedSource | undefined, outcome: 'carried' | 'unreachable'];
  /** A command from the edge: accepted, or refused with the reason the edge was told. */
  command: [name: AgentCommand['name'], refusal: string | undefined];
  /** The edge's `stop` command was carried out: the connection is closing for good. */
  stop: [];
  /** A `restart` command was accepted; `staged` is the release to run, if an update finished. */
  restart: [staged: StagedRelease | undefined];
  update: [UpdateEvent];
};

/**
 * An edge's own address that gave no session is left alone this long, so the next dial goes to the
 * shared address (the address may be stale); an edge restarting at the same address is back soon.
 */
const UNREACHABLE_FOR_MS = 3_000;
/** An edge that refused while others carry a session is left alone this long (its configuration may lag). */
const REFUSED_FOR_MS = 30_000;
/** After an edge said "already held", the shared address is tried again after this (doubling, capped). */
const ALREADY_HELD_RETRY_MS = 1_000;
const ALREADY_HELD_RETRY_CAP_MS = 30_000;

/**
 * `edgeward agent`: holds a session on each of several edges (`haConnections`, one connection per
 * edge: `edge-link.ts`) so losing an edge loses none of its traffic. It dials the edge address it
 * was given (every address a DNS name resolves to), learns the live edges from the first edge's
 * verdict and later updates, and dials each edge by its own address when it advertises one, or the
 * shared address again (naming the edges it holds, which an edge it already holds refuses) until it
 * holds a session on as many edges as it should. Each session is piped to the forward target per
 * stream. Reconnects with exponential backoff and full jitter; each connection is a new session
 * with a new id. Carries out the edge's commands (restart, stop, update) for the whole agent.
 */
export class Agent extends EventEmitter<AgentEvents> {
  readonly updater: Updater;
  readonly #platform: NodeJS.Platform;
  readonly #haConnections: number;
  #stopped = false;
  readonly #links = new Set<EdgeLink>();
  /** The address each link dialed, so a dial of the shared address can prefer an unused one. */
  readonly #dialed = new Map<EdgeLink, string>();
  #timer: NodeJS.Timeout | undefined;
  #attempt = 0;
  #alreadyHeldDelayMs = 0;
  readonly #alreadyHeldLinks = new WeakSet<EdgeLink>();
  /** Links that dialed an edge's own address (not the shared one). */
  readonly #direct = new WeakSet<EdgeLink>();
  /** Edge addresses that gave no session lately, and until when they are left alone. */
  readonly #unreachable = new Map<string, number>();
  /** A name of the shared address is being resolved: the dial after it is the one in flight. */
  #resolving = false;
  /** The live edges as the last version 2 edge said (empty: only the shared address is known). */
  #edges: LiveEdge[] = [];
  #done = deferred<AgentEnd>();
  #ended = false;

  /** Where the next carried connection goes; `setForward` moves it without a new session. */
  #forward: ForwardTarget;

  constructor(private readonly options: AgentOptions) {
    super();
    parseEdgeAddr(options.edgeAddr); // fails here, not on the first dial
    this.#platform = options.platform ?? process.platform;
    this.#forward = options.forward;
    this.#haConnections = options.haConnections ?? DEFAULT_HA_CONNECTIONS;
    if (!Number.isInteger(this.#haConnections) || this.#haConnections < 1)
      throw new Error(`haConnections: expected a whole number of at least 1, not ${this.#haConnections}`);
    this.updater = new Updater({ currentVersion: options.agentVersion, ...options.update });
  }

  /** Sends the connections carried from now on to `target`; the sessions stay as they are. */
  setForward(target: ForwardTarget): void {
    this.#forward = target;
  }

  /** The id of the oldest session open now, if any. */
  get sessionId(): string | undefined {
    return this.sessionIds[0];
  }

  /** Every session open now, oldest first. */
  get sessionIds(): string[] {
    return [...this.#links].flatMap((link) => (link.sessionId ? [link.sessionId] : []));
  }

  /** Settles when this run of the agent ends (it does not reconnect after), with why. */
  get done(): Promise<AgentEnd> {
    return this.#done.promise;
  }

  start(): void {
    if (this.#ended) {
      this.#done = deferred<AgentEnd>();
      this.#ended = false;
    }
    this.#stopped = false;
    this.#fill();
  }

  /**
   * Closes the connections and stops reconnecting: at once, or `graceful`ly (each edge is sent a
   * GOAWAY, so it opens no new stream and takes the session out of rotation, and the streams in
   * flight finish, for up to 2 s).
   */
  stop(options: { graceful?: boolean } = {}): void {
    this.#end({ reason: 'stopped' }, options.graceful ?? false);
  }

  #end(end: AgentEnd, graceful: boolean): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.updater.cancel();
    for (const link of this.#links) link.close(graceful, 'agent stopping');
    if (this.#ended) return;
    this.#ended = true;
    this.#done.resolve(end);
  }

  #hello(): AgentHelloV2 {
    return {
      authtoken: this.options.authtoken,
      agent_version: this.options.agentVersion,
      os: this.#platform,
      labels: this.options.labels,
      ...(this.options.metadata === undefined ? {} : { metadata: this.options.metadata }),
      held_edge_ids: [...this.#links].flatMap((link) =>
        link.sessionId && link.edgeId && !link.draining ? [link.edgeId] : [],
      ),
    };
  }

  /** How many edges to hold a session on now: as many as are live, up to `haConnections`. */
  #target(): number {
    return Math.max(1, Math.min(this.#haConnections, this.#edges.length));
  }

  /**
   * Dials until the agent holds (or is dialing) as many edges as it should: an edge it knows the
   * address of and does not hold first, otherwise the shared address. One dial at a time.
   */
  #fill(): void {
    if (this.#stopped || this.#timer !== undefined || this.#resolving) return;
    const active = [...this.#links].filter((link) => !link.draining);
    if (active.some((link) => link.sessionId === undefined)) return; // one dial in flight at a time
    if (active.length >= this.#target()) return;
    // Holding nothing, the shared address first: an edge's own address may be stale or out of reach.
    if (this.sessionIds.length === 0) {
      this.#dialShared();
      return;
    }
    const held = new Set(active.map((link) => link.edgeId));
    const now = Date.now();
    const direct = this.#edges.find(
      (edge) =>
        edge.tunnel_addr && !held.has(edge.id) && (this.#unreachable.get(edge.tunnel_addr) ?? 0) <= now,
    );
    if (direct?.tunnel_addr) this.#dial(direct.tunnel_addr, { direct: true });
    else this.#dialShared();
  }

  /** Waits `delayMs`, then fills again. */
  #fillLater(delayMs: number): void {
    if (this.#stopped || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#fill();
    }, delayMs);
  }

  /** The shared address; a name resolving to several addresses dials one no link uses yet. */
  #dialShared(): void {
    const { host, port } = parseEdgeAddr(this.options.edgeAddr);
    if (isIP(host)) {
      this.#dial(this.options.edgeAddr);
      return;
    }
    this.#resolving = true;
    const resolveHost = this.options.resolveHost ?? resolveAll;
    resolveHost(host)
      .then(
        (addresses) => {
          const used = new Set(this.#dialed.values());
          const fresh = addresses.filter((address) => !used.has(joinHostPort(address, port)));
          const pool = fresh.length > 0 ? fresh : addresses;
          const pick = pool[Math.floor(Math.random() * pool.length)];
          return pick === undefined ? this.options.edgeAddr : joinHostPort(pick, port);
        },
        // Dialing the name lets TLS report the failure the usual way (and back off).
        () => this.options.edgeAddr,
      )
      .then((address) => {
        this.#resolving = false;
        this.#dial(address, { nameOfShared: host });
      });
  }

  /** Dials one edge: the shared address (`nameOfShared`: the name it was resolved from) or an edge's own (`direct`). */
  #dial(
    address: string,
    { nameOfShared, direct = false }: { nameOfShared?: string; direct?: boolean } = {},
  ): void {
    if (this.#stopped) return;
    const { host, port } = parseEdgeAddr(address);
    const shared = parseEdgeAddr(this.options.edgeAddr).host;
    const link = new EdgeLink({
      host,
      port,
      // Every edge serves the shared address's certificate, whichever address reached it.
      serverName: this.options.serverName ?? nameOfShared ?? shared,
      ca: this.options.ca,
      hello: () => this.#hello(),
      ...(this.options.verdictTimeoutMs === undefined
        ? {}
        : { verdictTimeoutMs: this.options.verdictTimeoutMs }),
      carry: (stream, source) => this.#carry(stream, source),
      command: (stream) => this.#commandStream(stream),
    });
    this.#links.add(link);
    this.#dialed.set(link, address);
    if (direct) this.#direct.add(link);
    link.on('session', (id, _edgeId, edges) => {
      // An edge that stops answering (it froze, the path died) is dropped, and replaced.
      const h2 = link.http2Session;
      if (h2) watchEdgeLiveness(h2, (reason) => link.close(false, reason), this.options.liveness);
      this.#attempt = 0;
      this.#alreadyHeldDelayMs = 0;
      if (edges) this.#edges = edges;
      this.emit('session', id);
      this.#fill();
    });
    link.on('edges', (edges) => {
      this.#edges = edges;
      this.#fill();
    });
    link.on('alreadyHeld', () => {
      this.#alreadyHeldLinks.add(link);
      // The shared address led back to an edge already held: try again a little later.
      this.#alreadyHeldDelayMs = Math.min(
        ALREADY_HELD_RETRY_CAP_MS,
        this.#alreadyHeldDelayMs === 0 ? ALREADY_HELD_RETRY_MS : this.#alreadyHeldDelayMs * 2,
      );
    });
    link.on('refused', (reason) => {
      // One edge refusing while another carries a session is that edge's view (its configuration
      // may lag): leave it for a while. Refused with nothing held, retrying would be refused again:
      // stop, and say why.
      if (this.sessionIds.length > 0) {
        this.#unreachable.set(address, Date.now() + REFUSED_FOR_MS);
        this.emit('edgeRefused', reason);
        link.close(false, `refused: ${reason}`);
        return;
      }
      this.#end({ reason: 'refused', message: reason }, false);
      this.emit('refused', reason);
    });
    link.on('draining', () => {
      this.emit('draining', link.sessionId);
      this.#fill();
    });
    link.once('closed', (reason, sessionId) => this.#onLinkClosed(link, reason, sessionId));
  }

  #onLinkClosed(link: EdgeLink, reason: string, sessionId: string | undefined): void {
    const address = this.#dialed.get(link);
    this.#links.delete(link);
    this.#dialed.delete(link);
    // An edge's own address that gave no session is not dialed again for a while: the shared one is.
    if (!sessionId && !this.#alreadyHeldLinks.has(link) && address !== undefined && this.#direct.has(link))
      this.#unreachable.set(
        address,
        Math.max(this.#unreachable.get(address) ?? 0, Date.now() + UNREACHABLE_FOR_MS),
      );
    if (sessionId) this.emit('sessionClosed', sessionId, reason);
    if (this.#stopped) return;
    const alreadyHeld = this.#alreadyHeldLinks.has(link);
    let delayMs: number;
    if (alreadyHeld) delayMs = this.#alreadyHeldDelayMs;
    // A session that worked ended while others carry on: replace it at once.
    else if (sessionId && this.sessionIds.length > 0) delayMs = 0;
    else delayMs = reconnectDelayMs(this.#attempt++);
    if (!alreadyHeld && this.sessionIds.length === 0) this.emit('disconnected', reason, delayMs);
    if (delayMs === 0) this.#fill();
    else this.#fillLater(delayMs);
  }

  /** A `restart` command (reconnect mode): every session ends and is dialed again at once, under new ids. */
  #restart(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#attempt = 0;
    const links = [...this.#links];
    let open = links.length;
    if (open === 0) this.#fill();
    for (const link of links) {
      link.once('closed', () => {
        if (--open === 0) this.#fill();
      });
      link.close(true, 'restart command');
    }
  }

  #commandStream(stream: ServerHttp2Stream): void {
    readJson(stream)
      .then(
        (body) => this.#onCommand(body, stream),
        () => answer(stream, 400, 'the command is not JSON'),
      )
      .catch((error: unknown) =>
        answer(stream, 500, `the agent failed: ${error instanceof Error ? error.message : String(error)}`),
      );
  }

  async #onCommand(body: unknown, stream: ServerHttp2Stream): Promise<void> {
    const parsed = agentCommand.safeParse(body);
    if (!parsed.success) {
      await answer(stream, 400, 'unknown command: expected {"name": "restart" | "stop" | "update"}');
      return;
    }
    const { name } = parsed.data;
    const refuse = async (reason: string) => {
      this.emit('command', name, reason);
      await answer(stream, 409, reason);
    };
    if (name === 'stop') {
      this.emit('command', name, undefined);
      await answer(stream, 204);
      this.#end({ reason: 'stop-command' }, true);
      this.emit('stop');
    } else if (name === 'restart') {
      if (this.#platform === 'win32') return refuse('restart is not supported on Windows agents');
      if (this.updater.state.state === 'updating')
        return refuse('the agent is updating; restart once the update has finished');
      this.emit('command', name, undefined);
      await answer(stream, 204);
      const staged = this.updater.staged;
      if (this.options.restart === 'exit') this.#end({ reason: 'restart', staged }, true);
      else this.#restart();
      this.emit('restart', staged);
    } else {
      let update: Awaited<ReturnType<Updater['begin']>>;
      try {
        update = await this.updater.begin();
      } catch (error) {
        if (error instanceof UpdateRefused) return refuse(error.message);
        throw error;
      }
      this.emit('command', name, undefined);
      await answer(stream, 204);
      this.emit('update', { state: 'updating', version: update.version });
      update.done.then(
        (staged) => this.emit('update', { state: 'updated', staged }),
        (error: unknown) =>
          this.emit('update', {
            state: 'failed',
            version: update.version,
            error: error instanceof Error ? error.message : String(error),
          }),
      );
    }
  }

  #carry(stream: ServerHttp2Stream, source: CarriedSource | undefined): void {
    dialTarget(this.#forward).then(
      (target) => {
        // The edge gave up on it while the agent dialed (the session left rotation, or closed).
        if (stream.destroyed) {
          target.destroy();
          return;
        }
        stream.respond({ ':status': 200 });
        this.emit('connection', source, 'carried');
        // Either side ending ends the other; HTTP/2 flow control paces both directions.
        pipeline(stream, target, stream, () => {
          target.destroy();
        });
      },
      () => {
        if (stream.destroyed) return;
        stream.respond({ ':status': 502 });
        stream.end();
        this.emit('connection', source, 'unreachable');
      },
    );
  }
}

/** Answers a request (with `{"error": …}` when refused); resolves once the stream has closed. */
function answer(stream: ServerHttp2Stream, status: number, error?: string): Promise<void> {
  if (stream.destroyed || stream.closed) return Promise.resolve();
  return new Promise((resolve) => {
    stream.once('close', () => resolve());
    if (error === undefined) {
      stream.respond({ ':status': status });
      stream.end();
    } else {
      stream.respond({ ':status': status, 'content-type': 'application/json' });
      stream.end(JSON.stringify({ error }));
    }
  });
}

async function resolveAll(host: string): Promise<string[]> {
  return (await lookup(host, { all: true })).map((entry) => entry.address);
}

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}
