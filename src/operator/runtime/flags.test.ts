import { parseArgs } from 'node:util';
import { describe, expect, it } from 'vitest';
import { managerOptionsFromFlags, RUNTIME_FLAGS } from './flags.js';

const parse = (args: string[]) => parseArgs({ args, options: RUNTIME_FLAGS, strict: true }).values;

describe('runtime flags', () => {
  it('has working defaults', () => {
    expect(managerOptionsFromFlags(parse([]), {})).toEqual({
      concurrency: { default: 10, perKind: {} },
      namespaces: [],
      metricsAddress: ':8080',
      probeAddress: ':8081',
      leaderElection: false,
      kubeRateLimit: { qps: 0, burst: 30 },
      apiRateLimit: { qps: 200, burst: 200 },
      resyncPeriodMs: 600_000,
      shutdownTimeoutMs: 25_000,
    });
  });

  it('takes --probe-addr and its controller-runtime name --health-probe-addr, not both', () => {
    expect(managerOptionsFromFlags(parse(['--probe-addr', ':9441']), {}).probeAddress).toBe(':9441');
    expect(managerOptionsFromFlags(parse(['--health-probe-addr', '0']), {}).probeAddress).toBe('0');
    expect(() =>
      managerOptionsFromFlags(parse(['--probe-addr', ':1', '--health-probe-addr', ':2']), {}),
    ).toThrow(/--probe-addr: give it once/);
  });

  it('reads --max-concurrent-reconciles as a default and per-kind counts, naming the flag on errors', () => {
    expect(managerOptionsFromFlags(parse([]), {}).concurrency).toEqual({ default: 10, perKind: {} });
    expect(
      managerOptionsFromFlags(parse(['--max-concurrent-reconciles', '4, TLSEdge=8,IPPolicy=1']), {})
        .concurrency,
    ).toEqual({ default: 4, perKind: { TLSEdge: 8, IPPolicy: 1 } });
    for (const bad of ['0', 'x', 'TLSEdge=0', 'tls-edge=3', '2.5']) {
      expect(() => managerOptionsFromFlags(parse(['--max-concurrent-reconciles', bad]), {})).toThrow(
        /^--max-concurrent-reconciles: /,
      );
    }
  });

  it('reads every flag', () => {
    const options = managerOptionsFromFlags(
      parse([
        '--watch-namespaces',
        'team-a, team-b',
        '--metrics-addr',
        '0',
        '--leader-elect',
        '--leader-election-id',
        'edge-lease',
        '--kube-api-qps',
        '50',
        '--api-burst',
        '5',
        '--resync-period',
        '90s',
      ]),
      { POD_NAMESPACE: 'edgeward-system' },
    );
    expect(options).toMatchObject({
      namespaces: ['team-a', 'team-b'],
      metricsAddress: '0',
      leaderElection: { namespace: 'edgeward-system', name: 'edge-lease' },
      kubeRateLimit: { qps: 50, burst: 30 },
      apiRateLimit: { qps: 200, burst: 5 },
      resyncPeriodMs: 90_000,
    });
  });

  it('reads the leader election timings, and refuses ones the election cannot keep', () => {
    const election = (args: string[]) =>
      managerOptionsFromFlags(parse(['--leader-elect', ...args]), { POD_NAMESPACE: 'ns' }).leaderElection;
    expect(election([])).toEqual({
      namespace: 'ns',
      name: 'edgeward-operator',
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
    });
    expect(
      election([
        '--leader-elect-lease-duration',
        '4s',
        '--leader-elect-renew-deadline',
        '3s',
        '--leader-elect-retry-period',
        '1s',
      ]),
    ).toMatchObject({ leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 1_000 });
    expect(() => election(['--leader-elect-lease-duration', '10s'])).toThrow(
      /^--leader-elect-renew-deadline: must be shorter/,
    );
    expect(() => election(['--leader-elect-retry-period', '10s'])).toThrow(/^--leader-elect-retry-period:/);
    expect(() => election(['--leader-elect-lease-duration', 'long'])).toThrow(
      /^--leader-elect-lease-duration:/,
    );
  });

  it('names the flag of a bad value', () => {
    expect(() => managerOptionsFromFlags(parse(['--resync-period', '10']), {})).toThrow(/^--resync-period:/);
    expect(() => managerOptionsFromFlags(parse(['--api-qps', 'fast']), {})).toThrow(/^--api-qps:/);
    expect(() => managerOptionsFromFlags(parse(['--leader-elect']), {})).toThrow(
      /^--leader-election-namespace:/,
    );
  });
});
