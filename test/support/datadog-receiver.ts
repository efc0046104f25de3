import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { gunzipSync } from 'node:zlib';
import type { EventEnvelope } from '../../src/schemas/event-delivery.js';
import { closeNow, listenOnLoopback } from './loopback-server.js';

/** One log of a Datadog logs intake v2 payload, as Datadog documents it. */
export interface DatadogLog {
  ddsource?: string;
  ddtags?: string;
  hostname?: string;
  service?: string;
  message: string;
}

export interface ReceivedLog {
  log: DatadogLog;
  envelope: EventEnvelope;
  apiKey: string;
}

/**
 * A Datadog logs intake on loopback that checks what the real one requires of a request —
 * `POST /api/v2/logs`, a `DD-API-KEY` it knows (403 otherwise, as Datadog answers), gzip, a JSON
 * array of at most 1,000 logs within 5 MB, each with a string `message` — and keeps every
 * envelope it accepted. Anything malformed is recorded in `violations` and answered 400, so a test
 * asserts there are none. `mode` simulates an outage (`down`: 503) or a slow intake (`slowMs`).
 */
export class DatadogReceiver {
  readonly received: ReceivedLog[] = [];
  readonly violations: string[] = [];
  /** Accepted requests, in order: whose key, how many logs. */
  readonly batches: { apiKey: string; size: number }[] = [];
  mode: 'up' | 'down' = 'up';
  /** Delay before answering each request. */
  slowMs = 0;
  inFlight = 0;
  url = '';
  readonly #apiKeys: Set<string>;
  #server: Server | undefined;

  constructor(
    apiKeys: string[],
    private readonly tls?: { cert: string; key: string },
  ) {
    this.#apiKeys = new Set(apiKeys);
  }

  async start(): Promise<this> {
    const handler = (request: IncomingMessage, response: ServerResponse) => {
      void this.#handle(request, response);
    };
    this.#server = this.tls ? createHttpsServer({ ...this.tls }, handler) : createServer(handler);
    const port = await listenOnLoopback(this.#server);
    this.url = `${this.tls ? 'https' : 'http'}://localhost:${port}`;
    return this;
  }

  stop(): Promise<void> {
    return closeNow(this.#server);
  }

  /** Envelopes accepted for one API key (one destination), in the order they arrived. */
  envelopesFor(apiKey: string): EventEnvelope[] {
    return this.received.filter((entry) => entry.apiKey === apiKey).map((entry) => entry.envelope);
  }

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    this.inFlight++;
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      if (this.slowMs > 0) await new Promise((resolve) => setTimeout(resolve, this.slowMs));
      const answer = (status: number, body: unknown) => {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(body));
      };
      if (this.mode === 'down') return answer(503, { errors: ['Service Unavailable'] });
      if (request.method !== 'POST' || request.url !== '/api/v2/logs') {
        this.violations.push(`${request.method} ${request.url}`);
        return answer(404, { errors: ['Not Found'] });
      }
      const apiKey = String(request.headers['dd-api-key'] ?? '');
      if (!this.#apiKeys.has(apiKey)) return answer(403, { errors: ['Forbidden'] });
      const logs = this.#parse(request, Buffer.concat(chunks));
      if (!logs) return answer(400, { errors: ['Bad Request'] });
      for (const log of logs) {
        this.received.push({ log, envelope: JSON.parse(log.message) as EventEnvelope, apiKey });
      }
      this.batches.push({ apiKey, size: logs.length });
      return answer(202, {});
    } finally {
      this.inFlight--;
    }
  }

  #parse(request: IncomingMessage, body: Buffer): DatadogLog[] | undefined {
    const fail = (why: string) => {
      this.violations.push(why);
      return undefined;
    };
    if (request.headers['content-encoding'] !== 'gzip') return fail('Content-Encoding is not gzip');
    if (!String(request.headers['content-type']).startsWith('application/json'))
      return fail(`Content-Type is ${request.headers['content-type']}`);
    let text: string;
    try {
      text = gunzipSync(body).toString('utf8');
    } catch {
      return fail('the body is not gzip');
    }
    if (Buffer.byteLength(text) > 5_000_000) return fail('the payload is over 5 MB uncompressed');
    const logs = JSON.parse(text) as unknown;
    if (!Array.isArray(logs)) return fail('the payload is not a JSON array');
    if (logs.length === 0 || logs.length > 1000) return fail(`the payload has ${logs.length} logs`);
    for (const log of logs as DatadogLog[]) {
      if (typeof log.message !== 'string') return fail('a log has no string message');
      if (Buffer.byteLength(log.message) > 1_000_000) return fail('a log is over 1 MB');
      for (const field of ['ddsource', 'ddtags', 'hostname', 'service'] as const) {
        if (log[field] !== undefined && typeof log[field] !== 'string')
          return fail(`${field} is not a string`);
      }
    }
    return logs as DatadogLog[];
  }
}
