import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, type Dispatcher, request } from 'undici';
import { EdgewardApiError, EdgewardTransportError } from './errors.js';
import { backoffMs, RETRYABLE_STATUS, type RetryOptions, retryAfterMs } from './retry-policy.js';

export interface ClientOptions {
  /** e.g. `https://api.example.com` (no trailing path). */
  baseUrl: string;
  /** The API key, or a function giving the current one (read per request: a rotated key file). */
  apiKey: string | (() => string);
  retry?: RetryOptions;
  /** Per-attempt timeout for headers and body. Default 30 s. */
  timeoutMs?: number;
  /** Bring your own undici dispatcher (proxies, custom CA); by default a keep-alive Agent. */
  dispatcher?: Dispatcher;
  userAgent?: string;
  /** Called after every HTTP attempt: for metrics (requests by method and status) and rate limiters. */
  onResponse?: (info: {
    method: string;
    path: string;
    statusCode: number;
    attempt: number;
    /** The server's `Retry-After`, when it sent one (429, 503): a shared limiter can pause that long. */
    retryAfterMs?: number;
  }) => void;
  /** Called before every HTTP attempt; may wait (a client-side rate limiter). */
  beforeRequest?: (info: { method: string; path: string; signal?: AbortSignal }) => Promise<void>;
  /**
   * Aborts every request of this client, in flight or waiting (an operator that lost its
   * leadership must not finish writes another replica may now be making).
   */
  signal?: AbortSignal;
  /**
   * The Idempotency-Key actually sent for a request given `idempotencyKey` (default: that key).
   * An operator derives it from the body too, so a changed request is a new create rather than
   * the server's 409 for a key reused with another body.
   */
  idempotencyKeyOf?: (key: string, request: { method: string; path: string; body: unknown }) => string;
}

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  /** Sent as `Idempotency-Key`; also what makes a POST safe to retry. */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

interface ErrorPayload {
  error_code?: string;
  msg?: string;
  details?: { operation_id?: string; resource_id?: string };
}

/** HTTP for the typed client: auth and version headers, JSON, typed errors, retries with backoff. */
export class Transport {
  readonly baseUrl: string;
  readonly #options: ClientOptions;
  readonly #retry: Required<RetryOptions>;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#options = options;
    this.#retry = {
      maxAttempts: options.retry?.maxAttempts ?? 4,
      baseDelayMs: options.retry?.baseDelayMs ?? 200,
      maxDelayMs: options.retry?.maxDelayMs ?? 30_000,
    };
    this.#ownsDispatcher = options.dispatcher === undefined;
    this.#dispatcher = options.dispatcher ?? new Agent({ keepAliveTimeout: 30_000, connections: 32 });
  }

  /**
   * Resolves a path (`/credentials`) or an absolute `next_page_uri` against the base URL. Only the
   * path and query of an absolute URL are kept: the API key goes to the configured origin and to
   * no host a response names (a server behind a proxy may not know its public address).
   */
  url(pathOrUrl: string, query?: RequestOptions['query']): URL {
    let url: URL;
    if (/^https?:\/\//.test(pathOrUrl)) {
      const given = new URL(pathOrUrl);
      url = new URL(`${given.pathname}${given.search}`, new URL(this.baseUrl).origin);
    } else {
      url = new URL(`${this.baseUrl}${pathOrUrl}`);
    }
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    return url;
  }

  async send<T>(method: Method, path: string, requestOptions: RequestOptions = {}): Promise<T> {
    const clientSignal = this.#options.signal;
    const options: RequestOptions =
      clientSignal === undefined
        ? requestOptions
        : {
            ...requestOptions,
            signal: requestOptions.signal
              ? AbortSignal.any([requestOptions.signal, clientSignal])
              : clientSignal,
          };
    const url = this.url(path, options.query);
    const label = `${url.pathname}${url.search}`;
    // A POST is only retried when an Idempotency-Key makes the retry safe.
    const retryable = method !== 'POST' || options.idempotencyKey !== undefined;
    const headers: Record<string, string> = {
      authorization: `Bearer ${typeof this.#options.apiKey === 'function' ? this.#options.apiKey() : this.#options.apiKey}`,
      'svc-version': '2',
      accept: 'application/json',
      'user-agent': this.#options.userAgent ?? 'edgeward-client',
    };
    if (options.idempotencyKey !== undefined) {
      const derive = this.#options.idempotencyKeyOf;
      headers['idempotency-key'] = derive
        ? derive(options.idempotencyKey, { method, path: url.pathname, body: options.body })
        : options.idempotencyKey;
    }
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }

    for (let attempt = 1; ; attempt++) {
      options.signal?.throwIfAborted();
      await this.#options.beforeRequest?.({ method, path: url.pathname, signal: options.signal });
      let statusCode: number;
      let responseHeaders: Record<string, string | string[] | undefined>;
      let text: string;
      try {
        const response = await request(url, {
          method,
          headers,
          body,
          dispatcher: this.#dispatcher,
          headersTimeout: this.#options.timeoutMs ?? 30_000,
          bodyTimeout: this.#options.timeoutMs ?? 30_000,
          signal: options.signal,
        });
        statusCode = response.statusCode;
        responseHeaders = response.headers;
        text = await response.body.text();
      } catch (cause) {
        if (options.signal?.aborted || !retryable || attempt >= this.#retry.maxAttempts) {
          throw new EdgewardTransportError(method, label, cause);
        }
        await sleep(backoffMs(attempt, this.#retry, undefined), undefined, { signal: options.signal });
        continue;
      }
      const retryAfter = retryAfterMs(responseHeaders['retry-after']);
      this.#options.onResponse?.({
        method,
        path: url.pathname,
        statusCode,
        attempt,
        ...(retryAfter === undefined ? {} : { retryAfterMs: retryAfter }),
      });
      if (statusCode < 400) return parseSuccess<T>(text, method, label);
      if (retryable && RETRYABLE_STATUS.has(statusCode) && attempt < this.#retry.maxAttempts) {
        const wait = backoffMs(attempt, this.#retry, retryAfterMs(responseHeaders['retry-after']));
        await sleep(wait, undefined, { signal: options.signal });
        continue;
      }
      throw this.#apiError(method, label, statusCode, text, responseHeaders);
    }
  }

  #apiError(
    method: string,
    path: string,
    statusCode: number,
    text: string,
    headers: Record<string, string | string[] | undefined>,
  ): EdgewardApiError {
    let payload: ErrorPayload = {};
    try {
      payload = JSON.parse(text) as ErrorPayload;
    } catch {
      // Not our JSON (a proxy's HTML page, say): the status and the raw text still go into the error.
      payload = { msg: text.slice(0, 200) };
    }
    const operationHeader = headers['svc-operation-id'];
    return new EdgewardApiError({
      method,
      path,
      statusCode,
      errorCode: payload.error_code ?? `HTTP_${statusCode}`,
      msg: payload.msg ?? '',
      operationId:
        payload.details?.operation_id ??
        (Array.isArray(operationHeader) ? operationHeader[0] : operationHeader),
      retryAfterMs: retryAfterMs(headers['retry-after']),
      resourceId: typeof payload.details?.resource_id === 'string' ? payload.details.resource_id : undefined,
    });
  }

  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }
}

/** A 2xx that is not JSON (a proxy's HTML page, say) is a transport problem, not a SyntaxError. */
function parseSuccess<T>(text: string, method: string, path: string): T {
  if (text === '') return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch (cause) {
    throw new EdgewardTransportError(
      method,
      path,
      new Error(`response is not JSON: ${text.slice(0, 80)}`, { cause }),
    );
  }
}
