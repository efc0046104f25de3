import { EventEmitter } from 'node:events';
import http2, { type IncomingHttpHeaders, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import { isIP } from 'node:net';
import { pipeline } from 'node:stream';
import tls from 'node:tls';
import {
  type AgentCommand,
  type AgentHello,
  agentCommand,
  type SessionVerdict,
  SourceHeader,
  sessionVerdict,
  TUNNEL_ALPN,
  TUNNEL_WINDOW_BYTES,
  TunnelPath,
} from '../schemas/tunnel-protocol.js';
import { dialTarget, type ForwardTarget } from './forward-target.js';
import { parseEdgeAddr } from './options.js';
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
  /** PEM of the CA that signed the edge's certificate; the system's CAs when absent. */
  ca?: string | Buffer;
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

export interface CarriedSource {
  ip: string;
  port: number;
}

type AgentEvents = {
  /** A session opened; its id is what the API lists. */
  session: [id: string];
  /** The edge refused the session (a bad token, a bind the ACL does not allow). */
  refused: [reason: string];
  /** The connection to the edge ended; the agent reconnects after `delayMs` unless stopped. */
  disconnected: [reason: string, delayMs: number];
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

/** How long a graceful close may take before the socket is destroyed. */
const CLOSE_GRACE_MS = 2_000;

/**
 * `edgeward agent`: dials the edge over TLS and serves HTTP/2 on that connection, so the edge can
 * open a stream per connection it carries; each stream is piped to the forward target. Reconnects
 * with exponential backoff and full jitter; each connection is a new session with a new id. Carries
 * out the edge's commands (restart, stop, update).
 */
export class Agent extends EventEmitter<AgentEvents> {
  readonly updater: Updater;
  readonly #platform: NodeJS.Platform;
  #stopped = false;
  #socket: tls.TLSSocket | undefined;
  #h2: ServerHttp2Session | undefined;
  #timer: NodeJS.Timeout | undefined;
  #attempt = 0;
  #sessionId: string | undefined;
  #restarting = false;
  #done = deferred<AgentEnd>();
  #ended = false;

  /** Where the next carried connection goes; `setForward` moves it without a new session. */
  #forward: ForwardTarget;

  constructor(private readonly options: AgentOptions) {
    super();
    parseEdgeAddr(options.edgeAddr); // fails here, not on the first dial
    this.#platform = options.platform ?? process.platform;
    this.#forward = options.forward;
    this.updater = new Updater({ currentVersion: options.agentVersion, ...options.update });
  }

  /** Sends the connections carried from now on to `target`; the session stays as it is. */
  setForward(target: ForwardTarget): void {
    this.#forward = target;
  }

  /** The id of the session open now, if any. */
  get sessionId(): string | undefined {
    return this.#sessionId;
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
    this.#connect();
  }

  /** Closes the connection and stops reconnecting. */
  stop(): void {
    this.#end({ reason: 'stopped' }, false);
  }

  #end(end: AgentEnd, graceful: boolean): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.updater.cancel();
    if (graceful) this.#closeConnection();
    else this.#socket?.destroy();
    if (this.#ended) return;
    this.#ended = true;
    this.#done.resolve(end);
  }

  /** Ends the HTTP/2 session with a GOAWAY once open streams finished, then the socket. */
  #closeConnection(): void {
    const socket = this.#socket;
    const h2 = this.#h2;
    if (!socket) return;
    if (!h2 || h2.closed || h2.destroyed) {
      socket.destroy();
      return;
    }
    const timer = setTimeout(() => socket.destroy(), CLOSE_GRACE_MS);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
    h2.close(() => socket.destroy());
  }

  #hello(): AgentHello {
    return {
      authtoken: this.options.authtoken,
      agent_version: this.options.agentVersion,
      os: this.#platform,
      labels: this.options.labels,
      ...(this.options.metadata === undefined ? {} : { metadata: this.options.metadata }),
    };
  }

  #connect(): void {
    const { host, port } = parseEdgeAddr(this.options.edgeAddr);
    // SNI carries names only (RFC 6066); an IP literal is checked against the certificate's IP SANs.
    const servername = this.options.serverName ?? (isIP(host) ? undefined : host);
    const socket = tls.connect({
      host,
      port,
      ...(servername === undefined ? {} : { servername }),
      ALPNProtocols: [TUNNEL_ALPN],
      ...(this.options.ca ? { ca: this.options.ca } : {}),
    });
    this.#socket = socket;
    let reason = 'connection closed';
    socket.once('secureConnect', () => {
      const server = http2.createServer({ settings: { initialWindowSize: TUNNEL_WINDOW_BYTES } });
      server.on('session', (session) => {
        this.#h2 = session;
        session.setLocalWindowSize(TUNNEL_WINDOW_BYTES);
      });
      server.on('stream', (stream, headers) => this.#onStream(stream, headers));
      server.on('sessionError', (error: Error) => {
        reason = error.message;
      });
      server.emit('connection', socket);
    });
    socket.on('error', (error: Error) => {
      reason = error.message;
    });
    socket.once('close', () => {
      this.#sessionId = undefined;
      this.#h2 = undefined;
      if (this.#stopped) return;
      let delayMs: number;
      if (this.#restarting) {
        this.#restarting = false;
        this.#attempt = 0;
        reason = 'restart command';
        delayMs = 0;
      } else delayMs = reconnectDelayMs(this.#attempt++);
      this.emit('disconnected', reason, delayMs);
      this.#timer = setTimeout(() => this.#connect(), delayMs);
    });
  }

  #onStream(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    stream.on('error', () => {}); // a reset stream is one carried connection ending, not the session
    const path = headers[':path'];
    if (path === TunnelPath.hello) {
      stream.respond({ ':status': 200, 'content-type': 'application/json' });
      stream.end(JSON.stringify(this.#hello()));
    } else if (path === TunnelPath.session) {
      readJson(stream).then(
        (body) => this.#onVerdict(sessionVerdict.parse(body), stream),
        () => stream.close(http2.constants.NGHTTP2_PROTOCOL_ERROR),
      );
    } else if (path === TunnelPath.connect) {
      this.#carry(stream, sourceOf(headers));
    } else if (path === TunnelPath.command) {
      readJson(stream)
        .then(
          (body) => this.#onCommand(body, stream),
          () => answer(stream, 400, 'the command is not JSON'),
        )
        .catch((error: unknown) =>
          answer(stream, 500, `the agent failed: ${error instanceof Error ? error.message : String(error)}`),
        );
    } else {
      stream.respond({ ':status': 404 });
      stream.end();
    }
  }

  #onVerdict(verdict: SessionVerdict, stream: ServerHttp2Stream): void {
    stream.respond({ ':status': 204 });
    stream.end();
    if ('error' in verdict) {
      // Retrying with the same token and labels would be refused again: stop, and say why.
      this.#end({ reason: 'refused', message: verdict.error }, false);
      this.emit('refused', verdict.error);
      return;
    }
    this.#attempt = 0;
    this.#sessionId = verdict.session_id;
    this.emit('session', verdict.session_id);
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
      else {
        this.#restarting = true;
        this.#closeConnection();
      }
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
        stream.respond({ ':status': 200 });
        this.emit('connection', source, 'carried');
        // Either side ending ends the other; HTTP/2 flow control paces both directions.
        pipeline(stream, target, stream, () => {
          target.destroy();
        });
      },
      () => {
        stream.respond({ ':status': 502 });
        stream.end();
        this.emit('connection', source, 'unreachable');
      },
    );
  }
}

function sourceOf(headers: IncomingHttpHeaders): CarriedSource | undefined {
  const ip = headers[SourceHeader.ip];
  const port = Number(headers[SourceHeader.port]);
  if (typeof ip !== 'string' || ip === '' || !Number.isInteger(port)) return undefined;
  return { ip, port };
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

function readJson(stream: ServerHttp2Stream): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let text = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      text += chunk;
      if (text.length > 64 * 1024) stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
    });
    stream.once('end', () => {
      try {
        resolve(JSON.parse(text));
      } catch (error) {
        reject(error);
      }
    });
    stream.once('error', reject);
  });
}

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}
