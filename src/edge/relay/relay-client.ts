import http2, { type ClientHttp2Session } from 'node:http2';
import type { Duplex } from 'node:stream';
import { TUNNEL_WINDOW_BYTES } from '../../schemas/tunnel-protocol.js';
import { RELAY_PATH, RelayHeader } from './relay-protocol.js';
import { relayClientTls } from './relay-tls.js';

/** The peer edge answered a relay with something other than 200: its status says why. */
export class RelayRefused extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const CONNECT_TIMEOUT_MS = 5_000;
/** A relay connection that has not answered a PING within this is dropped (and dialed again on next use). */
const PING_EVERY_MS = 5_000;
const PING_TIMEOUT_MS = 10_000;

/**
 * One HTTP/2 connection per peer edge, dialed on first use and again after it drops; each relayed
 * public connection is one stream on it.
 */
export class RelayClient {
  readonly #connections = new Map<string, ClientHttp2Session>();
  readonly #timers = new Map<string, NodeJS.Timeout>();

  constructor(private readonly edgeKey: string) {}

  /** A stream to `sessionId` held by the edge at `relayAddr`; rejects when that edge cannot carry it. */
  async open(relayAddr: string, sessionId: string, source: { ip: string; port: number }): Promise<Duplex> {
    const session = await this.#connection(relayAddr);
    return new Promise((resolve, reject) => {
      let stream: http2.ClientHttp2Stream;
      try {
        stream = session.request({
          ':method': 'POST',
          ':path': RELAY_PATH,
          [RelayHeader.sessionId]: sessionId,
          [RelayHeader.sourceIp]: source.ip,
          [RelayHeader.sourcePort]: String(source.port),
        });
      } catch (error) {
        reject(new Error(`relay to ${relayAddr}: the connection is closing`, { cause: error }));
        return;
      }
      const fail = (error: Error) => reject(new Error(`relay to ${relayAddr} failed`, { cause: error }));
      stream.once('error', fail);
      stream.once('response', (headers) => {
        stream.off('error', fail);
        const status = Number(headers[':status']);
        if (status === 200) {
          resolve(stream);
          return;
        }
        stream.close();
        reject(new RelayRefused(status, `relay to ${relayAddr}: session ${sessionId} answered ${status}`));
      });
    });
  }

  /** Closes connections to edges no longer live. */
  retain(relayAddrs: ReadonlySet<string>): void {
    for (const addr of [...this.#connections.keys()]) if (!relayAddrs.has(addr)) this.#drop(addr);
  }

  close(): void {
    for (const addr of [...this.#connections.keys()]) this.#drop(addr);
  }

  #drop(addr: string): void {
    const session = this.#connections.get(addr);
    this.#connections.delete(addr);
    clearInterval(this.#timers.get(addr));
    this.#timers.delete(addr);
    session?.close();
  }

  #connection(addr: string): Promise<ClientHttp2Session> {
    const existing = this.#connections.get(addr);
    if (existing && !existing.closed && !existing.destroyed) {
      if (existing.connecting) return onceConnected(existing, addr);
      return Promise.resolve(existing);
    }
    const url = `https://${addr}`;
    const session = http2.connect(url, {
      ...relayClientTls(this.edgeKey),
      settings: { initialWindowSize: TUNNEL_WINDOW_BYTES },
    });
    session.on('error', () => {}); // surfaces through the request that needed it, or the next dial
    session.once('close', () => {
      if (this.#connections.get(addr) === session) this.#drop(addr);
    });
    session.once('connect', () => session.setLocalWindowSize(TUNNEL_WINDOW_BYTES));
    this.#connections.set(addr, session);
    this.#timers.set(addr, this.#watch(session));
    return onceConnected(session, addr);
  }

  /** Pings the peer: a frozen edge's connection is dropped rather than handed new streams. */
  #watch(session: ClientHttp2Session): NodeJS.Timeout {
    const timer = setInterval(() => {
      if (session.connecting || session.destroyed) return;
      const overdue = setTimeout(
        () => session.destroy(new Error('the peer edge stopped answering PINGs')),
        PING_TIMEOUT_MS,
      );
      overdue.unref();
      try {
        session.ping(() => clearTimeout(overdue));
      } catch {
        clearTimeout(overdue); // the session is closing: its `close` drops it
      }
    }, PING_EVERY_MS);
    timer.unref();
    return timer;
  }
}

function onceConnected(session: ClientHttp2Session, addr: string): Promise<ClientHttp2Session> {
  if (!session.connecting) return Promise.resolve(session);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      session.destroy();
      reject(new Error(`relay to ${addr}: no connection within ${CONNECT_TIMEOUT_MS} ms`));
    }, CONNECT_TIMEOUT_MS);
    session.once('connect', () => {
      clearTimeout(timer);
      resolve(session);
    });
    session.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`relay to ${addr}: connecting failed`, { cause: error }));
    });
    session.once('close', () => {
      clearTimeout(timer);
      reject(new Error(`relay to ${addr}: the connection closed`));
    });
  });
}
