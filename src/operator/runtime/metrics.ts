import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { ListenAddress } from '../../lib/listen-address.js';
import { listen, type RunningServer } from './http-listener.js';

export type ReconcileResult = 'success' | 'error' | 'requeue';
/** Which API a request went to. */
export type ApiName = 'kubernetes' | 'edgeward';

export interface OperatorMetricsOptions {
  /** Node.js process metrics (CPU, memory, event loop lag). Default true. */
  processMetrics?: boolean;
}

/**
 * The operator's Prometheus metrics in their own registry (not prom-client's global one, so two
 * managers in one process, as in tests, do not collide):
 *
 * - `edgeward_operator_reconcile_total{kind,result}` result = success | error | requeue
 * - `edgeward_operator_reconcile_errors_total{kind}`
 * - `edgeward_operator_reconcile_duration_seconds{kind}` histogram
 * - `edgeward_operator_workqueue_depth{kind}` keys ready to process
 * - `edgeward_operator_workqueue_retries_total{kind}`
 * - `edgeward_operator_api_requests_total{api,method,code}` api = kubernetes | edgeward; code 0 =
 *   no response
 * - `edgeward_operator_leader` 1 while this replica leads
 */
export class OperatorMetrics {
  readonly registry = new Registry();
  readonly #reconciles: Counter<'kind' | 'result'>;
  readonly #errors: Counter<'kind'>;
  readonly #duration: Histogram<'kind'>;
  readonly #retries: Counter<'kind'>;
  readonly #requests: Counter<'api' | 'method' | 'code'>;
  readonly #leader: Gauge;
  readonly #depthSources = new Map<string, () => number>();

  constructor(options: OperatorMetricsOptions = {}) {
    const registers = [this.registry];
    const depthSources = this.#depthSources;
    this.#reconciles = new Counter({
      name: 'edgeward_operator_reconcile_total',
      help: 'Reconciles by kind and result (success, error, requeue).',
      labelNames: ['kind', 'result'],
      registers,
    });
    this.#errors = new Counter({
      name: 'edgeward_operator_reconcile_errors_total',
      help: 'Reconciles that failed, by kind.',
      labelNames: ['kind'],
      registers,
    });
    this.#duration = new Histogram({
      name: 'edgeward_operator_reconcile_duration_seconds',
      help: 'Time spent in one reconcile, by kind.',
      labelNames: ['kind'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.#retries = new Counter({
      name: 'edgeward_operator_workqueue_retries_total',
      help: 'Keys put back with backoff after a failed reconcile, by kind.',
      labelNames: ['kind'],
      registers,
    });
    new Gauge({
      name: 'edgeward_operator_workqueue_depth',
      help: 'Keys waiting to be reconciled, by kind.',
      labelNames: ['kind'],
      registers,
      collect() {
        for (const [kind, depth] of depthSources) this.set({ kind }, depth());
      },
    });
    this.#requests = new Counter({
      name: 'edgeward_operator_api_requests_total',
      help: 'HTTP requests to the Kubernetes and edgeward APIs, by method and status code.',
      labelNames: ['api', 'method', 'code'],
      registers,
    });
    this.#leader = new Gauge({
      name: 'edgeward_operator_leader',
      help: '1 while this replica holds the leader lease.',
      registers,
    });
    this.#leader.set(0);
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  observeReconcile(kind: string, result: ReconcileResult, seconds: number): void {
    this.#reconciles.inc({ kind, result });
    if (result === 'error') this.#errors.inc({ kind });
    this.#duration.observe({ kind }, seconds);
  }

  retried(kind: string): void {
    this.#retries.inc({ kind });
  }

  apiRequest(api: ApiName, method: string, statusCode: number): void {
    this.#requests.inc({ api, method: method.toUpperCase(), code: String(statusCode) });
  }

  /** Reports `depth()` as the queue depth of a kind at every scrape. */
  trackQueueDepth(kind: string, depth: () => number): void {
    this.#depthSources.set(kind, depth);
  }

  setLeader(leading: boolean): void {
    this.#leader.set(leading ? 1 : 0);
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}

/** Serves `GET /metrics` in the Prometheus text format. */
export function startMetricsServer(address: ListenAddress, metrics: OperatorMetrics): Promise<RunningServer> {
  return listen(address, async (request, response) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    if (request.method !== 'GET' || path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    const body = await metrics.text();
    response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body);
  });
}
