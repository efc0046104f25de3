import type { Flags } from '../../lib/flags.js';
import { LISTENER_OFF } from '../../lib/listen-address.js';
import { parseDuration } from './duration.js';
import type { ManagerOptions } from './manager.js';

/**
 * The runtime's command-line flags, for `edgeward operator` to spread into its own table. Names
 * follow controller-runtime's where one exists.
 */
export const RUNTIME_FLAGS = {
  'watch-namespaces': {
    type: 'string',
    value: 'A,B',
    defaultText: 'all',
    help: 'watch only these namespaces',
  },
  'metrics-addr': {
    type: 'string',
    value: 'ADDR',
    default: ':8080',
    help: `the Prometheus /metrics listen address; ${LISTENER_OFF} disables`,
  },
  // No parser default: it would make "both flags given" undetectable (applied below instead).
  'probe-addr': {
    type: 'string',
    value: 'ADDR',
    defaultText: ':8081',
    help: `the /healthz and /readyz listen address; ${LISTENER_OFF} disables`,
  },
  // controller-runtime's name for the same flag, accepted so its users' habits work.
  'health-probe-addr': { type: 'string', value: 'ADDR', help: 'the same as --probe-addr' },
  'leader-elect': { type: 'boolean', help: 'run workers only while holding the leader Lease' },
  'leader-election-namespace': {
    type: 'string',
    value: 'NS',
    defaultText: 'POD_NAMESPACE',
    help: 'the namespace of the Lease',
  },
  'leader-election-id': {
    type: 'string',
    value: 'NAME',
    default: 'edgeward-operator',
    help: 'the name of the Lease',
  },
  // kube-controller-manager's names and defaults (client-go's leaderelection).
  'leader-elect-lease-duration': {
    type: 'string',
    value: 'DURATION',
    default: '15s',
    help: "how long a standby waits after the leader's last renewal before taking the Lease; also how long a replica's report of its Tunnel sessions stands without renewal",
  },
  'leader-elect-renew-deadline': {
    type: 'string',
    value: 'DURATION',
    default: '10s',
    help: 'a leader that could not renew the Lease for this long steps down (shorter than the lease duration)',
  },
  'leader-elect-retry-period': {
    type: 'string',
    value: 'DURATION',
    default: '2s',
    help: 'between attempts to take or renew the Lease',
  },
  // 0: no client-side limit, as controller-runtime since v0.21 (sig-apimachinery's advice): the
  // apiserver's Priority and Fairness queues and sheds load and its 429s pause every request
  // here; the reconcile workers bound what is in flight. 20/30 made 1,000 TLSEdges wait ~4 min on
  // their status writes and finalizer patches alone.
  'kube-api-qps': {
    type: 'string',
    value: 'N',
    default: '0',
    help: "the Kubernetes client's rate limit; 0 sets none and leaves it to the apiserver's Priority and Fairness, whose 429s pause the client",
  },
  'kube-api-burst': {
    type: 'string',
    value: 'N',
    default: '30',
    help: "the Kubernetes client's burst, when --kube-api-qps sets a limit",
  },
  // The server's default per-key budget (12,000 requests a minute, --rate-limit): an operator
  // converging a large apply uses what its key is granted, and no more.
  'api-qps': {
    type: 'string',
    value: 'N',
    default: '200',
    help: "the edgeward API client's rate limit (the server's default budget per key); 0 sets none",
  },
  'api-burst': { type: 'string', value: 'N', default: '200', help: "the edgeward API client's burst" },
  // 10, as Crossplane's managed resources (--max-reconcile-rate): a reconcile mostly waits on two
  // APIs, so workers overlap waits; 2 kept 1,000 TLSEdges queued for minutes. Never 2 of one key.
  'max-concurrent-reconciles': {
    type: 'string',
    value: 'N[,KIND=N...]',
    default: '10',
    help: 'reconciles at once per kind, e.g. 4,TLSEdge=16',
  },
  'resync-period': {
    type: 'string',
    value: 'DURATION',
    default: '10m',
    help: 'the default periodic resync',
  },
  'shutdown-timeout': {
    type: 'string',
    value: 'DURATION',
    default: '25s',
    help: 'how long SIGTERM waits for reconciles in flight',
  },
} as const satisfies Flags;

export type RuntimeFlagValues = { [K in keyof typeof RUNTIME_FLAGS]?: string | boolean };

type FlagOptions = Omit<ManagerOptions, 'kubeConfig' | 'log' | 'metrics'>;

/** Turns parsed flag values into manager options; throws naming the flag on a bad value. */
export function managerOptionsFromFlags(
  values: RuntimeFlagValues,
  env: Record<string, string | undefined> = process.env,
): FlagOptions {
  const text = (name: keyof typeof RUNTIME_FLAGS) => {
    const spec = RUNTIME_FLAGS[name];
    const value = values[name] ?? ('default' in spec ? spec.default : undefined);
    return typeof value === 'string' ? value : undefined;
  };
  const number = (name: keyof typeof RUNTIME_FLAGS) => {
    const value = Number(text(name));
    if (!Number.isFinite(value) || value < 0) throw new Error(`--${name}: not a non-negative number`);
    return value;
  };
  const duration = (name: keyof typeof RUNTIME_FLAGS) => {
    const value = parseDuration(text(name) ?? '');
    if (value === undefined) throw new Error(`--${name}: not a duration like 30s, 10m or 1h`);
    return value;
  };
  const namespaces = (text('watch-namespaces') ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  let leaderElection: ManagerOptions['leaderElection'] = false;
  if (values['leader-elect'] === true) {
    const namespace = text('leader-election-namespace') ?? env.POD_NAMESPACE;
    if (!namespace) {
      throw new Error(
        '--leader-election-namespace: required with --leader-elect outside a pod (no POD_NAMESPACE)',
      );
    }
    const leaseDurationMs = duration('leader-elect-lease-duration');
    const renewDeadlineMs = duration('leader-elect-renew-deadline');
    const retryPeriodMs = duration('leader-elect-retry-period');
    if (renewDeadlineMs >= leaseDurationMs)
      throw new Error('--leader-elect-renew-deadline: must be shorter than --leader-elect-lease-duration');
    if (retryPeriodMs <= 0 || retryPeriodMs >= renewDeadlineMs)
      throw new Error(
        '--leader-elect-retry-period: must be above 0 and shorter than --leader-elect-renew-deadline',
      );
    leaderElection = {
      namespace,
      name: text('leader-election-id') ?? 'edgeward-operator',
      leaseDurationMs,
      renewDeadlineMs,
      retryPeriodMs,
    };
  }
  if (values['probe-addr'] !== undefined && values['health-probe-addr'] !== undefined) {
    throw new Error('--probe-addr: give it once (--health-probe-addr is the same flag)');
  }
  return {
    concurrency: concurrencyFrom(text('max-concurrent-reconciles') ?? '10'),
    namespaces,
    metricsAddress: text('metrics-addr'),
    probeAddress: text('health-probe-addr') ?? text('probe-addr') ?? ':8081',
    leaderElection,
    kubeRateLimit: { qps: number('kube-api-qps'), burst: number('kube-api-burst') },
    apiRateLimit: { qps: number('api-qps'), burst: number('api-burst') },
    resyncPeriodMs: duration('resync-period'),
    shutdownTimeoutMs: duration('shutdown-timeout'),
  };
}

/** `4` or `4,TLSEdge=8,IPPolicy=1` (kind names as in the CRDs) into manager options. */
function concurrencyFrom(value: string): NonNullable<ManagerOptions['concurrency']> {
  const flag = '--max-concurrent-reconciles';
  const count = (text: string, what: string) => {
    const parsed = Number(text);
    if (!Number.isInteger(parsed) || parsed < 1)
      throw new Error(`${flag}: ${what} must be a whole number >= 1`);
    return parsed;
  };
  const concurrency = { default: 10, perKind: {} as Record<string, number> };
  for (const part of value.split(',').map((piece) => piece.trim())) {
    if (part === '') continue;
    const equals = part.indexOf('=');
    if (equals < 0) {
      concurrency.default = count(part, `'${part}'`);
    } else {
      const kind = part.slice(0, equals).trim();
      if (!/^[A-Z][A-Za-z]*$/.test(kind))
        throw new Error(`${flag}: '${kind}' is not a kind name like TLSEdge`);
      concurrency.perKind[kind] = count(part.slice(equals + 1).trim(), `${kind}'s count`);
    }
  }
  return concurrency;
}
