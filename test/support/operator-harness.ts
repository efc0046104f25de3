import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { expect, inject } from 'vitest';
import { freePort } from '../../src/dev-cluster/free-port.js';
import type { AcmeSettings } from '../../src/server/acme/acme-settings.js';
import type { EventDeliveryOptions } from '../../src/server/events/dispatcher.js';
import { waitFor } from './eventually.js';
import { tool } from './kubectl.js';
import { ADMIN_KEY, startTestServer, type TestServer } from './server.js';

/**
 * What the operator's end-to-end test files share: the CRDs applied to the test control plane, a
 * namespace of the file's own, a real edgeward server, and `edgeward operator` as a separate
 * process watching that namespace (more replicas of it on demand: `addReplica`); plus
 * kubectl-level helpers to apply objects and wait for them.
 */

/** The name of the operator process `start` runs. */
export const FIRST_REPLICA = 'operator';

interface OperatorReplica {
  metricsPort: number;
  child: ChildProcess | undefined;
}

const CRDS_DIR = fileURLToPath(new URL('../../crds/', import.meta.url));
const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const GROUP_VERSION = 'edgeward.dev/v1alpha1';

export interface Condition {
  type: string;
  status: string;
  reason: string;
  message?: string;
  observedGeneration?: number;
}

export interface Cr {
  metadata: {
    name: string;
    uid: string;
    generation: number;
    finalizers?: string[];
    annotations?: Record<string, string>;
  };
  spec: Record<string, unknown>;
  status?: {
    id?: string;
    uri?: string;
    observedGeneration?: number;
    conditions?: Condition[];
    rules?: { id: string; cidr: string; action: string }[];
  } & Record<string, unknown>;
}

export interface Secret {
  metadata: {
    name: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { uid: string; kind: string; controller?: boolean }[];
  };
  type: string;
  data?: Record<string, string>;
}

export const condition = (cr: Cr | undefined, type: string) =>
  cr?.status?.conditions?.find((c) => c.type === type);

/** The decoded value of one key of a Secret. */
export const secretValue = (secret: Secret, key: string) =>
  Buffer.from(secret.data?.[key] ?? '', 'base64').toString('utf8');

export class OperatorHarness {
  /** Random per file, for names that must not collide across files and runs. */
  readonly suffix = randomBytes(3).toString('hex');
  readonly namespace: string;
  #server: TestServer | undefined;
  readonly #replicas = new Map<string, OperatorReplica>();
  #output = '';
  #pokes = 0;
  #operatorArgs: readonly string[] = [];

  constructor(name: string) {
    this.namespace = `edgeward-${name}-${this.suffix}`;
  }

  /** The edgeward server of this file (started by `start`). */
  get t(): TestServer {
    if (!this.#server) throw new Error('OperatorHarness.start() has not run');
    return this.#server;
  }

  kubectl = (args: string[], input?: string) => tool(inject('kubectl'), inject('kubeconfig'), args, input);

  /**
   * CRDs, namespace, server, operator. Call from `beforeAll`. `operatorArgs` runs once the server
   * is up and returns more flags for the operator (and every restart of it): e.g. `--edge-addr` of
   * an edge fed by that server. `eventDelivery` turns on the server's event delivery (off by default);
   * `acme`, its certificates by ACME (a local Pebble: test/support/pebble.ts).
   */
  async start(
    options: {
      operatorArgs?: (server: TestServer) => Promise<string[]>;
      eventDelivery?: EventDeliveryOptions;
      acme?: AcmeSettings;
    } = {},
  ): Promise<void> {
    // Test files run in parallel on one cluster: two applies racing to create a CRD make one of
    // them fail AlreadyExists; applied again, it finds the CRD and has nothing left to do.
    await this.kubectl(['apply', '-f', CRDS_DIR]).catch((error: unknown) => {
      if (!String(error).includes('AlreadyExists')) throw error;
      return this.kubectl(['apply', '-f', CRDS_DIR]);
    });
    await this.kubectl(['wait', '--for=condition=Established', '--timeout=60s', '-f', CRDS_DIR]);
    await this.kubectl(['create', 'namespace', this.namespace]);
    this.#server = await startTestServer({ eventDelivery: options.eventDelivery, acme: options.acme });
    await this.addReplica(FIRST_REPLICA);
    this.#operatorArgs = (await options.operatorArgs?.(this.#server)) ?? [];
    this.startOperator();
  }

  /** Makes room for another operator process (its own metrics port); start it with `startOperator`. */
  async addReplica(name: string): Promise<void> {
    if (this.#replicas.has(name)) throw new Error(`replica ${name} exists`);
    this.#replicas.set(name, { metricsPort: await freePort(), child: undefined });
  }

  /** Kills every operator process, drops finalizers (nothing would remove them), deletes the namespace. */
  async stop(): Promise<void> {
    for (const name of this.#replicas.keys()) await this.stopOperator('SIGKILL', name);
    const { stdout } = await this.kubectl(['get', '-n', this.namespace, 'edgeward', '-o', 'name']).catch(
      () => ({
        stdout: '',
      }),
    );
    for (const name of stdout.split('\n').filter(Boolean)) {
      await this.kubectl([
        'patch',
        '-n',
        this.namespace,
        name,
        '--type=merge',
        '-p',
        '{"metadata":{"finalizers":null}}',
      ]).catch(() => undefined);
    }
    await this.kubectl(['delete', 'namespace', this.namespace, '--wait=false']).catch(() => undefined);
    await this.#server?.stop();
  }

  /**
   * Starts `edgeward operator` (the replica `name`, made by `addReplica`); `extraArgs` come last,
   * so they win over the harness's own flags.
   */
  startOperator(extraArgs: string[] = [], name = FIRST_REPLICA): void {
    const replica = this.#replica(name);
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        CLI,
        'operator',
        '--api-url',
        this.t.baseUrl,
        '--watch-namespaces',
        this.namespace,
        '--metrics-addr',
        `127.0.0.1:${replica.metricsPort}`,
        '--probe-addr',
        'off',
        '--api-qps',
        '20',
        // GatewayClasses are cluster-scoped: every file's operator would write the status of the
        // classes of operator-gateway-class.test.ts (a write its expectNoDrift would count). That
        // file turns it back on (`--gateway-api auto`: the last value wins).
        '--gateway-api',
        'off',
        ...this.#operatorArgs,
        ...extraArgs,
      ],
      {
        env: {
          ...process.env,
          KUBECONFIG: inject('kubeconfig'),
          EDGEWARD_API_KEY: ADMIN_KEY,
          LOG_LEVEL: 'warn',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const label = name === FIRST_REPLICA ? '' : `[${name}] `;
    const keep = (chunk: Buffer) => {
      this.#output = (this.#output + label + chunk.toString('utf8')).slice(-20_000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    replica.child = child;
  }

  /** Signals the replica's process and waits for it to exit. */
  async stopOperator(signal: NodeJS.Signals, name = FIRST_REPLICA): Promise<void> {
    const replica = this.#replica(name);
    const child = replica.child;
    replica.child = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await exited;
  }

  /** The operator's recent output (for failure messages). */
  get operatorOutput(): string {
    return this.#output;
  }

  yamlOf = (kind: string, name: string, spec: Record<string, unknown>, annotations = {}): string =>
    JSON.stringify({
      apiVersion: GROUP_VERSION,
      kind,
      metadata: { name, namespace: this.namespace, annotations },
      spec,
    });

  apply = (...objects: string[]) =>
    this.kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects.map((o) => JSON.parse(o)) }),
    );

  delete = (plural: string, name: string) =>
    this.kubectl(['delete', '-n', this.namespace, `${plural}.edgeward.dev`, name, '--wait=false']);

  getCr = async (plural: string, name: string): Promise<Cr | undefined> =>
    this.#getJson<Cr>(['get', '-n', this.namespace, `${plural}.edgeward.dev`, name, '-o', 'json']);

  getSecret = (name: string): Promise<Secret | undefined> =>
    this.#getJson<Secret>(['get', '-n', this.namespace, 'secret', name, '-o', 'json']);

  async #getJson<T>(args: string[]): Promise<T | undefined> {
    try {
      return JSON.parse((await this.kubectl(args)).stdout) as T;
    } catch (error) {
      if (String(error).includes('NotFound')) return undefined;
      throw error;
    }
  }

  eventually = async <T>(
    what: string,
    probe: () => Promise<T | undefined>,
    timeoutMs = 30_000,
  ): Promise<T> => {
    return waitFor(probe, {
      what,
      timeoutMs,
      intervalMs: 200,
      detail: () => `operator output:\n${this.#output.slice(-4000)}`,
    });
  };

  /** Waits until Ready has `status` (and `reason`, if given) for the object's current generation. */
  waitFor = (plural: string, name: string, status = 'True', reason?: string, timeoutMs?: number) =>
    this.eventually(
      `${plural}/${name} Ready=${status}${reason ? ` ${reason}` : ''}`,
      async () => {
        const cr = await this.getCr(plural, name);
        const ready = condition(cr, 'Ready');
        const current = ready?.observedGeneration === cr?.metadata.generation;
        return cr && current && ready?.status === status && (!reason || ready.reason === reason)
          ? cr
          : undefined;
      },
      timeoutMs,
    );

  waitGone = (plural: string, name: string) =>
    this.eventually(`${plural}/${name} gone`, async () =>
      (await this.getCr(plural, name)) ? undefined : true,
    );

  #replica(name: string): OperatorReplica {
    const replica = this.#replicas.get(name);
    if (!replica) throw new Error(`no operator replica ${name}: addReplica('${name}') first`);
    return replica;
  }

  /** Sums the operator's Prometheus samples of `metric` whose labels include all of `labels`. */
  metricSum = async (
    metric: string,
    labels: Record<string, string> = {},
    replica = FIRST_REPLICA,
  ): Promise<number> => {
    const url = `http://127.0.0.1:${this.#replica(replica).metricsPort}/metrics`;
    const text = await (await fetch(url)).text();
    let sum = 0;
    for (const line of text.split('\n')) {
      const match = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match || match[1] !== metric) continue;
      const sample = Object.fromEntries(
        [...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]),
      );
      if (Object.entries(labels).every(([key, value]) => sample[key] === value)) sum += Number(match[3]);
    }
    return sum;
  };

  /** API calls the operator made that were not reads (edgeward or Kubernetes). */
  operatorWrites = async (): Promise<number> => {
    let writes = 0;
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      writes += await this.metricSum('edgeward_operator_api_requests_total', { method });
    }
    return writes;
  };

  /**
   * Enqueues the object (a label change) and expects a reconcile of it that wrote nothing: not to
   * the edgeward API, not even a status update. Proven by the operator's own metrics: its reconcile
   * count of the kind goes up, its count of non-GET requests does not.
   */
  expectNoDrift = async (plural: string, kind: string, name: string): Promise<void> => {
    // Earlier work still queued or running would be counted as this poke's reconcile.
    await this.settled();
    const reconcilesBefore = await this.metricSum('edgeward_operator_reconcile_total', { kind });
    const writesBefore = await this.operatorWrites();
    await this.kubectl([
      'label',
      '--overwrite',
      '-n',
      this.namespace,
      `${plural}.edgeward.dev`,
      name,
      `poke=${++this.#pokes}`,
    ]);
    await this.eventually(`a reconcile of ${plural}/${name}`, async () =>
      (await this.metricSum('edgeward_operator_reconcile_total', { kind })) > reconcilesBefore
        ? true
        : undefined,
    );
    await this.settled();
    expect(await this.operatorWrites()).toBe(writesBefore);
  };

  /** Waits until no key is queued and the reconcile count stays the same for half a second. */
  settled = async (): Promise<void> => {
    let last = -1;
    await this.eventually('the operator to settle', async () => {
      const depth = await this.metricSum('edgeward_operator_workqueue_depth');
      const reconciles = await this.metricSum('edgeward_operator_reconcile_total');
      const still = depth === 0 && reconciles === last;
      last = reconciles;
      if (still) return true;
      await new Promise((resolve) => setTimeout(resolve, 500));
      return undefined;
    });
  };
}
