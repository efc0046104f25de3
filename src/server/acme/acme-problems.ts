import { AsyncLocalStorage } from 'node:async_hooks';
import axios, { type AxiosAdapter, type InternalAxiosRequestConfig } from 'axios';

/**
 * The CA's own words about a failure. The ACME client turns a problem document (RFC 8555 §6.7)
 * into an Error carrying only its `detail`; what a caller must act on — the problem `type`
 * (`rateLimited`, `dns`, ...) and `Retry-After` — is kept here instead, per job: each job runs in
 * its own async context, and every response of the CA inside it is looked at once.
 */
export interface CaProblem {
  /** The problem type without the `urn:ietf:params:acme:error:` prefix, e.g. `rateLimited`. */
  type: string;
  detail: string;
  status: number;
  /** When the CA asked us to come back, from `Retry-After` (seconds or an HTTP date). */
  retryAfter?: Date;
}

const ACME_ERROR_PREFIX = 'urn:ietf:params:acme:error:';
const context = new AsyncLocalStorage<{ last?: CaProblem; unreachable?: string }>();

/** Runs `job` so that `lastCaProblem()` inside it sees the CA's last problem document. */
export function withProblemRecorder<T>(job: () => Promise<T>): Promise<T> {
  return context.run({}, job);
}

export function lastCaProblem(): CaProblem | undefined {
  return context.getStore()?.last;
}

/**
 * Why the CA could not be reached at all (no answer: refused, reset, timed out), when that was the
 * last thing that happened. The client library loses this: it reads the status of a response that
 * never came.
 */
export function caUnreachable(): string | undefined {
  return context.getStore()?.unreachable;
}

/** What is read of a response of the ACME client's HTTP library (axios). */
interface CaResponse {
  status: number;
  data?: unknown;
  headers: Record<string, unknown>;
}

/** The part of the client's axios instance used here. */
interface CaHttp {
  interceptors: {
    response: {
      use(
        onFulfilled: <R extends CaResponse>(response: R) => R,
        onRejected: (error: unknown) => never,
      ): unknown;
    };
  };
}

/** Looks at every response of the client's HTTP instance, and every request that got none (once per process). */
export function recordProblemsOf(http: CaHttp & { defaults: { adapter?: unknown } }): void {
  const send: AxiosAdapter = axios.getAdapter(['http']);
  http.defaults.adapter = async (config: InternalAxiosRequestConfig) => {
    try {
      return await send(config);
    } catch (error) {
      const store = context.getStore();
      if (store && !(error as { response?: unknown }).response) {
        const code = (error as { code?: string }).code;
        store.unreachable = `${config.method?.toUpperCase() ?? 'GET'} ${config.url}: ${code ?? (error as Error).message}`;
        store.last = undefined;
      }
      throw error;
    }
  };
  const record = (response: CaResponse | undefined) => {
    const store = context.getStore();
    if (!store || !response) return;
    store.unreachable = undefined;
    // A later success makes an earlier problem (a bad nonce retried, say) no longer the answer.
    if (response.status < 400) {
      store.last = undefined;
      return;
    }
    const body = response.data as { type?: unknown; detail?: unknown } | undefined;
    const type =
      typeof body?.type === 'string' ? body.type.replace(ACME_ERROR_PREFIX, '') : `http-${response.status}`;
    const retryAfter = parseRetryAfter(response.headers['retry-after'], new Date());
    store.last = {
      type,
      detail: typeof body?.detail === 'string' ? body.detail : '',
      status: response.status,
      ...(retryAfter ? { retryAfter } : {}),
    };
  };
  http.interceptors.response.use(
    <R extends CaResponse>(response: R) => {
      record(response);
      return response;
    },
    (error: unknown) => {
      record((error as { response?: CaResponse } | undefined)?.response);
      throw error;
    },
  );
}

/** `Retry-After` as delta-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when absent or unreadable. */
export function parseRetryAfter(value: unknown, now: Date): Date | undefined {
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return new Date(now.getTime() + Number(value.trim()) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : new Date(date);
}
