import { EventEmitter } from 'node:events';
import { createInterface } from 'node:readline';
import { Agent, request } from 'undici';
import {
  EDGE_FEED_PATH,
  EDGE_FEED_QUERY,
  type EdgeCommand,
  type EdgeCommandResult,
  type EdgeConfig,
  type EdgePeer,
  type EdgeSessionReport,
  edgeCommandResultPath,
  edgeFeedMessage,
  edgeSessionPath,
} from '../../schemas/edge-config.js';

/** The control plane could not be reached at all (as opposed to answering an error). */
class Unreachable extends Error {}

const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 15_000;

/** Exponential backoff with full jitter: `attempt` 0 waits up to 250 ms, capped at 15 s. */
function backoffDelayMs(attempt: number): number {
  return Math.floor(Math.random() * Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** attempt));
}

export interface ControlPlaneOptions {
  /**
   * The control plane's replicas (or one load-balanced URL). The feed is held on one at a time;
   * when it drops, the next reconnect tries the next URL, so a dead replica costs one attempt.
   */
  apiUrls: readonly string[];
  edgeKey: string;
  edgeId: string;
  region: string;
  /** Where agents and other edges reach this edge directly, told to the control plane with the feed. */
  advertise?: () => { tunnelAddr?: string; relayAddr?: string };
  /** A feed that says nothing for this long (pings come every 15 s) is dead. */
  silenceTimeoutMs?: number;
}

type ControlPlaneEvents = {
  config: [EdgeConfig];
  command: [EdgeCommand];
  /** The live edges and the sessions they hold. */
  peers: [EdgePeer[]];
  /** The feed is (again) open: sessions must be reported anew, the server forgot them. */
  connected: [];
  disconnected: [reason: string, retryInMs: number];
};

/**
 * The edge's link to the control plane: one long-lived feed (NDJSON) that pushes configuration and
 * commands, reconnecting with backoff, and plain requests that report sessions and command results.
 */
export class ControlPlaneClient extends EventEmitter<ControlPlaneEvents> {
  // A frozen replica must not hold a feed's opening or a report for undici's default 300 s.
  readonly #dispatcher = new Agent({ keepAliveTimeout: 30_000, bodyTimeout: 0, headersTimeout: 10_000 });
  /** The control plane refused the relay's query parameters (a release before them): the feed goes without. */
  #olderControlPlane = false;
  #stopped = false;
  #attempt = 0;
  #abort: AbortController | undefined;
  #retry: NodeJS.Timeout | undefined;
  /** The replica the feed is on (or is being opened on): reports go there too. */
  #current = 0;

  constructor(private readonly options: ControlPlaneOptions) {
    super();
    if (options.apiUrls.length === 0) throw new Error('apiUrls: at least one control plane URL is required');
  }

  /** The replica in use now. */
  get apiUrl(): string {
    return this.options.apiUrls[this.#current % this.options.apiUrls.length] as string;
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

  /**
   * One report to the replica the feed is on; when that one cannot be reached, the others in turn
   * (every replica shares the database, and the edge's lease makes any of them accept it).
   */
  async #call(method: 'PUT' | 'DELETE' | 'POST', path: string, body?: unknown): Promise<void> {
    const urls = this.options.apiUrls;
    let lastError: unknown;
    for (let offset = 0; offset < urls.length; offset++) {
      const apiUrl = urls[(this.#current + offset) % urls.length] as string;
      try {
        await this.#callOne(apiUrl, method, path, body);
        return;
      } catch (error) {
        if (!(error instanceof Unreachable)) throw error;
        lastError = error;
      }
    }
    throw lastError;
  }

  async #callOne(
    apiUrl: string,
    method: 'PUT' | 'DELETE' | 'POST',
    path: string,
    body?: unknown,
  ): Promise<void> {
    let response: Awaited<ReturnType<typeof request>>;
    try {
      response = await request(new URL(path, apiUrl), {
        method,
        dispatcher: this.#dispatcher,
        headers: {
          ...this.#headers(),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new Unreachable(`${method} ${path}: ${apiUrl} cannot be reached`, { cause: error });
    }
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
    const url = new URL(EDGE_FEED_PATH, this.apiUrl);
    url.searchParams.set('edge_id', this.options.edgeId);
    url.searchParams.set('region', this.options.region);
    const asksForPeers = !this.#olderControlPlane;
    if (asksForPeers) {
      url.searchParams.set(EDGE_FEED_QUERY.peers, '1');
      const { tunnelAddr, relayAddr } = this.options.advertise?.() ?? {};
      if (tunnelAddr) url.searchParams.set(EDGE_FEED_QUERY.tunnelAddr, tunnelAddr);
      if (relayAddr) url.searchParams.set(EDGE_FEED_QUERY.relayAddr, relayAddr);
    }
    let reason = 'feed ended';
    let retryNow = false;
    try {
      const response = await request(url, {
        dispatcher: this.#dispatcher,
        headers: { ...this.#headers(), accept: 'application/x-ndjson' },
        signal: abort.signal,
      });
      if (response.statusCode !== 200) {
        const text = await response.body.text();
        // A server older than the relay refuses its query parameters (a rolling upgrade that took
        // an edge first): serve without peers rather than not at all.
        if (response.statusCode === 400 && asksForPeers) {
          this.#olderControlPlane = true;
          retryNow = true;
        }
        throw new Error(`the control plane answered ${response.statusCode}: ${text.slice(0, 300)}`);
      }
      await this.#read(response.body, abort);
    } catch (error) {
      reason = error instanceof Error ? error.message : String(error);
    }
    if (this.#stopped) return;
    // The next attempt goes to the next replica: this one may be the one that died.
    if (this.options.apiUrls.length > 1) this.#current = (this.#current + 1) % this.options.apiUrls.length;
    const delay =
      retryNow || (this.options.apiUrls.length > 1 && this.#attempt === 0)
        ? 0
        : backoffDelayMs(this.#attempt);
    this.#attempt++;
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
        } else if (message.type === 'peers') {
          this.emit('peers', message.peers);
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
