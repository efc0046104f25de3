import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { request } from 'undici';
import { closeNow, listenOnLoopback } from './loopback-server.js';

/** What a recorded AWS call was and who signed it. */
export interface RecordedCall {
  /** `Kinesis_20131202.PutRecords`, or the query API's `Action` (`AssumeRole`). */
  operation: string;
  /** The access key id of the SigV4 `Authorization` header. */
  accessKeyId: string;
}

/**
 * An HTTP proxy on loopback in front of a local AWS emulator: it forwards every request unchanged
 * and records which operation it was and which access key signed it (what a test cannot see from
 * the emulator), and can play an outage (`down`: every request answered 503 without forwarding).
 */
export class RecordingProxy {
  readonly calls: RecordedCall[] = [];
  down = false;
  url = '';
  #server: Server | undefined;

  constructor(private readonly upstream: string) {}

  async start(): Promise<this> {
    this.#server = createServer((incoming, outgoing) => {
      this.#forward(incoming, outgoing).catch((error: unknown) => {
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

  /** Operations recorded so far, by name. */
  count(operation: string): number {
    return this.calls.filter((call) => call.operation === operation).length;
  }

  async #forward(incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const target = incoming.headers['x-amz-target'];
    const action = /(?:^|&)Action=(\w+)/.exec(body.toString('utf8'))?.[1];
    const accessKeyId = /Credential=([^/]+)\//.exec(String(incoming.headers.authorization ?? ''))?.[1] ?? '';
    this.calls.push({ operation: String(target ?? action ?? 'unknown'), accessKeyId });
    if (this.down) {
      outgoing.writeHead(503, { 'content-type': 'application/json' });
      outgoing.end('{"message":"Service Unavailable"}');
      return;
    }
    const headers = { ...incoming.headers };
    delete headers.connection;
    delete headers['transfer-encoding'];
    const response = await request(`${this.upstream}${incoming.url ?? '/'}`, {
      method: incoming.method as 'POST',
      headers,
      body,
    });
    const responseHeaders = { ...response.headers };
    delete responseHeaders.connection;
    delete responseHeaders['transfer-encoding'];
    outgoing.writeHead(response.statusCode, responseHeaders);
    outgoing.end(Buffer.from(await response.body.arrayBuffer()));
  }
}
