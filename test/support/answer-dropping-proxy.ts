import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { request } from 'undici';
import { closeNow, listenOnLoopback } from './loopback-server.js';

/** A request the proxy saw that `loseAnswers` matched. */
export interface MatchedRequest {
  method: string;
  path: string;
  idempotencyKey: string | undefined;
  /** What the proxy did: forwarded and dropped the answer, or refused without forwarding. */
  fate: 'answer-lost' | 'refused';
}

/**
 * An HTTP proxy on loopback in front of the edgeward server that can lose a create's answer: the
 * server makes the resource, the client sees its connection drop. `loseAnswers(method, path)`:
 * the next matching request is forwarded and its answer dropped; later ones are answered 503
 * without forwarding (the server stays unreachable for them) until `release()`. Everything else
 * is forwarded unchanged.
 */
export class AnswerDroppingProxy {
  readonly matched: MatchedRequest[] = [];
  url = '';
  #server: Server | undefined;
  #match: { method: string; path: string; lostOne: boolean } | undefined;

  constructor(private readonly upstream: string) {}

  async start(): Promise<this> {
    this.#server = createServer((incoming, outgoing) => {
      this.#handle(incoming, outgoing).catch((error: unknown) => {
        if (outgoing.headersSent) return;
        outgoing.writeHead(502, { 'content-type': 'text/plain' });
        outgoing.end(`proxy: ${error instanceof Error ? error.message : String(error)}`);
      });
    });
    this.url = `http://127.0.0.1:${await listenOnLoopback(this.#server)}`;
    return this;
  }

  stop(): Promise<void> {
    return closeNow(this.#server);
  }

  loseAnswers(method: string, path: string): void {
    this.#match = { method, path, lostOne: false };
  }

  release(): void {
    this.#match = undefined;
  }

  async #handle(incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const path = (incoming.url ?? '/').split('?')[0] ?? '/';
    const match = this.#match;
    const matches = match !== undefined && incoming.method === match.method && path === match.path;
    if (matches && match.lostOne) {
      this.#record(incoming, path, 'refused');
      outgoing.writeHead(503, { 'content-type': 'application/json' });
      outgoing.end('{"msg":"proxy: unavailable"}');
      return;
    }
    const headers = { ...incoming.headers };
    delete headers.connection;
    delete headers['transfer-encoding'];
    const response = await request(`${this.upstream}${incoming.url ?? '/'}`, {
      method: incoming.method as 'POST',
      headers,
      body: body.length > 0 ? body : undefined,
    });
    const answer = Buffer.from(await response.body.arrayBuffer());
    if (matches) {
      // The server has made it; the client never hears so.
      match.lostOne = true;
      this.#record(incoming, path, 'answer-lost');
      incoming.socket.destroy();
      return;
    }
    const responseHeaders = { ...response.headers };
    delete responseHeaders.connection;
    delete responseHeaders['transfer-encoding'];
    outgoing.writeHead(response.statusCode, responseHeaders);
    outgoing.end(answer);
  }

  #record(incoming: IncomingMessage, path: string, fate: MatchedRequest['fate']): void {
    const key = incoming.headers['idempotency-key'];
    this.matched.push({
      method: incoming.method ?? '',
      path,
      idempotencyKey: typeof key === 'string' ? key : undefined,
      fate,
    });
  }
}
