import { EventEmitter } from 'node:events';
import { createInterface } from 'node:readline';
import { Agent, request } from 'undici';
import {
  EDGE_FEED_PATH,
  type EdgeCommand,
  type EdgeCommandResult,
  type EdgeConfig,
  type EdgeSessionReport,
  edgeCommandResultPath,
  edgeFeedMessage,
  edgeSessionPath,
} from '../../schemas/edge-config.js';

const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 15_000;

/** Exponential backoff with full jitter: `attempt` 0 waits up to 250 ms, capped at 15 s. */
function backoffDelayMs(attempt: number): number {
  return Math.floor(Math.random() * Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** attempt));
}

export interface ControlPlaneOptions {
  apiUrl: string;
  edgeKey: string;
  edgeId: string;
  region: string;
  /** A feed that says nothing for this long (pings come every 15 s) is dead. */
  silenceTimeoutMs?: number;
}

type ControlPlaneEvents = {
  config: [EdgeConfig];
  command: [EdgeCommand];
  /** The feed is (again) open: sessions must be reported anew, the server forgot them. */
  connected: [];
  disconnected: [reason: string, retryInMs: number];
};

/**
 * The edge's link to the control plane: one long-lived feed (NDJSON) that pushes configuration and
 * commands, reconnecting with backoff, and plain requests that report sessions and command results.
 */
export class ControlPlaneClient extends EventEmitter<ControlPlaneEvents> {
  readonly #dispatcher = new Agent({ keepAliveTimeout: 30_000, bodyTimeout: 0 });
  #stopped = false;
  #attempt = 0;
  #abort: AbortController | undefined;
  #retry: NodeJS.Timeout | undefined;

  constructor(private readonly options: ControlPlaneOptions) {
    super();
  }

  start(): void {
    this.#stopped = false;
    this.#open().catch(() => {}); // failures are reported through `disconnected` and retried
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retry);
    this.#abort?.abort();
    await this.#dispatcher.close().catch(() => {}); // closing twice or with aborted requests is fine
  }

  async reportSession(sessionId: string, report: EdgeSessionReport): Promise<void> {
    await this.#call('PUT', edgeSessionPath(this.options.edgeId, sessionId), report);
  }

  async removeSession(sessionId: string): Promise<void> {
    await this.#call('DELETE', edgeSessionPath(this.options.edgeId, sessionId));
  }

  async commandResult(commandId: string, result: EdgeCommandResult): Promise<void> {
    await this.#call('POST', edgeCommandResultPath(commandId), result);
  }

  #headers(): Record<string, string> {
    return { authorization: `Bearer ${this.options.edgeKey}` };
  }

  async #call(method: 'PUT' | 'DELETE' | 'POST', path: string, body?: unknown): Promise<void> {
    const response = await request(new URL(path, this.options.apiUrl), {
      method,
      dispatcher: this.#dispatcher,
      headers: { ...this.#headers(), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.body.text();
    if (response.statusCode >= 300) {
      throw new Error(
        `${method} ${path}: the control plane answered ${response.statusCode}: ${text.slice(0, 300)}`,
      );
    }
  }

  async #open(): Promise<void> {
    const abort = new AbortController();
    this.#abort = abort;
    const url = new URL(EDGE_FEED_PATH, this.options.apiUrl);
    url.searchParams.set('edge_id', this.options.edgeId);
    url.searchParams.set('region', this.options.region);
    let reason = 'feed ended';
    try {
      const response = await request(url, {
        dispatcher: this.#dispatcher,
        headers: { ...this.#headers(), accept: 'application/x-ndjson' },
        signal: abort.signal,
      });
      if (response.statusCode !== 200) {
        const text = await response.body.text();
        throw new Error(`the control plane answered ${response.statusCode}: ${text.slice(0, 300)}`);
      }
      await this.#read(response.body, abort);
    } catch (error) {
      reason = error instanceof Error ? error.message : String(error);
    }
    if (this.#stopped) return;
    const delay = backoffDelayMs(this.#attempt++);
    this.emit('disconnected', reason, delay);
    this.#retry = setTimeout(() => {
      this.#open().catch(() => {});
    }, delay);
  }

  async #read(body: NodeJS.ReadableStream, abort: AbortController): Promise<void> {
    const silence = this.options.silenceTimeoutMs ?? 45_000;
    let watchdog = setTimeout(() => abort.abort(new Error('the feed went silent')), silence);
    const lines = createInterface({ input: body, crlfDelay: Number.POSITIVE_INFINITY });
    let first = true;
    try {
      for await (const line of lines) {
        clearTimeout(watchdog);
        watchdog = setTimeout(() => abort.abort(new Error('the feed went silent')), silence);
        if (line.trim() === '') continue;
        const message = edgeFeedMessage.parse(JSON.parse(line));
        if (message.type === 'config') {
          this.emit('config', message.config);
          if (first) {
            first = false;
            this.#attempt = 0;
            this.emit('connected');
          }
        } else if (message.type === 'command') {
          this.emit('command', message.command);
        }
      }
    } finally {
      clearTimeout(watchdog);
      // A line that failed to parse leaves the response open: close it, or the connection (and
      // `stop()`, which waits for the dispatcher's connections) would hang on it.
      lines.close();
      (body as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
    }
  }
}
