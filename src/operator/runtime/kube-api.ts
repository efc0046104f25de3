import {
  ApiException,
  type Configuration,
  createConfiguration,
  HttpMethod,
  IsomorphicFetchHttpLibrary,
  type KubeConfig,
  type RequestContext,
  type ResponseContext,
  ServerConfiguration,
  Watch,
  wrapHttpLibrary,
} from '@kubernetes/client-node';
import { retryAfterMs } from '../../client/retry-policy.js';
import { keepAliveAuthentication } from './kube-keep-alive.js';
import type { RateLimiter } from './rate-limiter.js';

/** What the HTTP layer reports about each Kubernetes call (for metrics). */
export interface KubeResponseInfo {
  method: string;
  /** HTTP status, or 0 when no response arrived (connection refused, reset, aborted). */
  statusCode: number;
  retryAfterMs?: number;
}

export interface KubeApiOptions {
  /** Client-side rate limit of every Kubernetes call (and of watch starts). */
  limiter?: RateLimiter;
  onResponse?: (info: KubeResponseInfo) => void;
  /** When a 429 carries no Retry-After, pause the limiter this long. Default 1 s. */
  defaultPauseMs?: number;
}

export interface KubeRequest {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** Default `application/json` when there is a body. */
  contentType?: string;
  signal?: AbortSignal;
}

type Verb = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
const METHODS: Record<Verb, HttpMethod> = {
  GET: HttpMethod.GET,
  POST: HttpMethod.POST,
  PUT: HttpMethod.PUT,
  PATCH: HttpMethod.PATCH,
  DELETE: HttpMethod.DELETE,
};

/**
 * The operator's one door to the Kubernetes API: a client-node `Configuration` whose HTTP layer
 * waits for the rate limiter, reports every response (metrics) and pauses the limiter on 429.
 * `request()` reaches any path (subresources, JSON/merge patches, any kind); `makeApiClient()`
 * gives client-node's generated clients over the same instrumented layer.
 */
export class KubeApi {
  readonly kubeConfig: KubeConfig;
  readonly configuration: Configuration;
  readonly limiter: RateLimiter | undefined;
  readonly #watch: Watch;
  readonly #authentication: ReturnType<typeof keepAliveAuthentication>;

  constructor(kubeConfig: KubeConfig, options: KubeApiOptions = {}) {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    this.kubeConfig = kubeConfig;
    this.limiter = options.limiter;
    this.#watch = new Watch(kubeConfig);
    const inner = new IsomorphicFetchHttpLibrary();
    const pauseMs = options.defaultPauseMs ?? 1000;
    const httpApi = wrapHttpLibrary({
      send: async (request: RequestContext): Promise<ResponseContext> => {
        await options.limiter?.acquire(request.getSignal() ?? undefined);
        const method = request.getHttpMethod().toString();
        let response: ResponseContext;
        try {
          response = await inner.send(request).toPromise();
        } catch (error) {
          options.onResponse?.({ method, statusCode: 0 });
          throw error;
        }
        const retryAfter = retryAfterMs(response.headers['retry-after']);
        options.onResponse?.({ method, statusCode: response.httpStatusCode, retryAfterMs: retryAfter });
        if (response.httpStatusCode === 429) options.limiter?.pause(retryAfter ?? pauseMs);
        return response;
      },
    });
    this.#authentication = keepAliveAuthentication(kubeConfig);
    this.configuration = createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: this.#authentication },
      httpApi,
    });
  }

  /** Closes the kept-alive connections (at shutdown). */
  close(): void {
    this.#authentication.close();
  }

  /** A generated client-node API class (CoreV1Api, ...) over the instrumented HTTP layer. */
  makeApiClient<T>(apiClass: new (configuration: Configuration) => T): T {
    return new apiClass(this.configuration);
  }

  /**
   * One call; resolves with the parsed JSON body (undefined when empty); rejects with
   * client-node's `ApiException` (`code`, `body` text, `headers`) on 4xx/5xx, as generated
   * clients do, so one set of error helpers serves both.
   */
  async request<T>(method: Verb, path: string, options: KubeRequest = {}): Promise<T> {
    const context = this.configuration.baseServer.makeRequestContext(path, METHODS[method]);
    context.setHeaderParam('Accept', 'application/json');
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) context.setQueryParam(name, String(value));
    }
    if (options.body !== undefined) {
      context.setHeaderParam('Content-Type', options.contentType ?? 'application/json');
      context.setBody(JSON.stringify(options.body));
    }
    if (options.signal) context.setSignal(options.signal);
    await this.configuration.authMethods.default?.applySecurityAuthentication(context);
    const response = await this.configuration.httpApi.send(context).toPromise();
    const text = await response.body.text();
    if (response.httpStatusCode >= 400) {
      throw new ApiException(response.httpStatusCode, `${method} ${path} failed`, text, response.headers);
    }
    return (text === '' ? undefined : JSON.parse(text)) as T;
  }

  /**
   * Starts a watch (client-node `Watch`: a streaming GET with `watch=true`). `onDone` gets null
   * when the server ends the stream, an error with `statusCode` when it refuses one.
   */
  async watch(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    onEvent: (type: string, object: unknown) => void,
    onDone: (error: unknown) => void,
  ): Promise<{ abort(): void }> {
    await this.limiter?.acquire();
    const controller = await this.#watch.watch(path, query, onEvent, onDone);
    return { abort: () => controller.abort() };
  }
}
