import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createPrivateKey, generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { selfSignedCertificate } from '../../src/crypto/x509.js';
import { freePort } from '../../src/dev-cluster/free-port.js';
import { finalizerPolicy } from '../../src/operator/admission/finalizer-policy.js';
import { OPERATOR_KINDS } from '../../src/operator/kinds.js';
import { type CliProcess, spawnCli } from '../support/cli-process.js';
import { waitFor } from '../support/eventually.js';
import { tool } from '../support/kubectl.js';
import { ADMIN_KEY, idPattern, startTestServer, type TestServer } from '../support/server.js';

/**
 * The Helm chart (charts/edgeward) and the kustomize config (config/) against a real
 * kube-apiserver: lint, schema, server-side dry runs of every rendered object, a real install,
 * upgrade and uninstall, and the chart's edge and operator run as processes with the chart's
 * arguments and Secrets, the operator under exactly the chart's RBAC (a ServiceAccount token, no
 * admin rights), until its CRs are Ready and a Tunnel is Online through that edge.
 *
 * Not covered here: the image (no Docker on the build machine) and the pods themselves (the test
 * control plane has no scheduler or kubelet, so the Deployment and StatefulSet never run).
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHART = join(ROOT, 'charts/edgeward');
const CLI = join(ROOT, 'src/cli.ts');
const suffix = randomBytes(3).toString('hex');
/** The default install (server + operator watching all namespaces) and the dry runs. */
const releaseNs = `edgeward-chart-${suffix}`;
const release = `ew-${suffix}`;
/** The operator-only install whose RBAC the operator process runs under. */
const operatorNs = `edgeward-chart-op-${suffix}`;
const operatorRelease = `ewop-${suffix}`;
/** Where that operator's CRs live (its only watched namespace). */
const workNs = `edgeward-chart-work-${suffix}`;
const GROUP_VERSION = 'edgeward.dev/v1alpha1';

let kubeconfig: string;
let scratch: string;
let t: TestServer | undefined;
let operator: ChildProcess | undefined;
let operatorOutput = '';
/** The chart's edge, run as a process with the chart's arguments. */
let edgeProcess: CliProcess | undefined;
/** Releases to uninstall in afterAll (release name -> namespace). */
const installed = new Map<string, string>();

const kubectl = (args: string[], input?: string) => tool(inject('kubectl'), kubeconfig, args, input);
const helm = (args: string[]) => tool(inject('helm'), kubeconfig, args);

interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    generation?: number;
    finalizers?: string[];
  };
  [field: string]: unknown;
}
interface Container {
  name: string;
  args: string[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  ports?: { name: string; containerPort: number; hostPort?: number }[];
  securityContext?: Record<string, unknown>;
  volumeMounts?: { name: string; mountPath: string; subPath?: string }[];
  startupProbe?: { httpGet: { path: string; port: string } };
  livenessProbe?: { httpGet: { path: string; port: string } };
  readinessProbe?: { httpGet: { path: string; port: string } };
}
interface PodSpec {
  serviceAccountName?: string;
  hostNetwork?: boolean;
  affinity?: unknown;
  dnsPolicy?: string;
  terminationGracePeriodSeconds?: number;
  automountServiceAccountToken?: boolean;
  containers: Container[];
  volumes?: {
    name: string;
    emptyDir?: unknown;
    secret?: { secretName: string; items?: { key: string }[] };
  }[];
}
interface Workload extends KubeObject {
  spec: { replicas?: number; template: { spec: PodSpec }; strategy?: Record<string, unknown> };
}
interface ServiceObject extends KubeObject {
  spec: {
    type: string;
    externalTrafficPolicy?: string;
    sessionAffinity?: string;
    selector: Record<string, string>;
    ports: { name: string; port: number; targetPort: string | number; nodePort?: number }[];
  };
}
interface Rule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
}
interface Cr extends KubeObject {
  status?: {
    id?: string;
    conditions?: { type: string; status: string; reason: string; observedGeneration?: number }[];
  } & Record<string, unknown>;
}

function documents(text: string): KubeObject[] {
  return parseAllDocuments(text)
    .map((document) => document.toJSON() as KubeObject | null)
    .filter((object): object is KubeObject => object !== null);
}

const find = (objects: KubeObject[], kind: string, name?: string) =>
  objects.filter((object) => object.kind === kind && (name === undefined || object.metadata.name === name));

/** The pod spec of a Deployment or StatefulSet, by name. */
const podOf = (objects: KubeObject[], kind: string, name: string): PodSpec => {
  const [object] = find(objects, kind, name) as Workload[];
  if (!object) throw new Error(`no ${kind} ${name}`);
  return object.spec.template.spec;
};

const rulesOf = (objects: KubeObject[], kind: string, name: string) => {
  const [object] = find(objects, kind, name);
  if (!object) throw new Error(`no ${kind} ${name} among ${objects.map((o) => o.kind).join(', ')}`);
  return object.rules as Rule[];
};

/** Renders the chart; rejects with helm's error (a `fail` message, a schema violation). */
async function template(namespace: string, set: string[] = [], extra: string[] = []): Promise<string> {
  const args = ['template', release, CHART, '--namespace', namespace, ...extra];
  for (const value of set) args.push('--set', value);
  return (await helm(args)).stdout;
}

/** `helm lint` expected to fail: its report (on stdout) and the error. */
async function lintOutput(args: string[]): Promise<string> {
  try {
    await helm(['lint', CHART, ...args]);
  } catch (error) {
    const cause = (error as Error & { cause?: { stdout?: string } }).cause;
    return `${cause?.stdout ?? ''}\n${String(error)}`;
  }
  throw new Error(`helm lint ${args.join(' ')} passed`);
}

/** Server-side dry run with strict field validation: every object must pass the apiserver's schema. */
async function dryRun(manifests: string): Promise<string[]> {
  const { stdout } = await kubectl(['apply', '--dry-run=server', '--validate=strict', '-f', '-'], manifests);
  return stdout.split('\n').filter(Boolean);
}

/** `kubectl auth can-i` as a ServiceAccount: true for "yes" (exit 0), false for "no" (exit 1). */
function canI(serviceAccount: string, namespace: string, verb: string, resource: string, where: string[]) {
  const args = [
    'auth',
    'can-i',
    verb,
    resource,
    '--as',
    `system:serviceaccount:${namespace}:${serviceAccount}`,
  ];
  return new Promise<boolean>((resolve, reject) => {
    execFile(
      inject('kubectl'),
      [...args, ...where],
      { env: { ...process.env, KUBECONFIG: kubeconfig } },
      (error, stdout) => {
        const answer = stdout.trim();
        if (answer === 'yes' && !error) resolve(true);
        else if (answer === 'no' && error?.code === 1) resolve(false);
        else reject(new Error(`kubectl ${args.join(' ')}: ${String(error)} ${stdout}`));
      },
    );
  });
}

function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 45_000): Promise<T> {
  return waitFor(probe, {
    what,
    timeoutMs,
    intervalMs: 250,
    detail: () => `operator output:\n${operatorOutput.slice(-4000)}`,
  });
}

async function getJson<T>(args: string[]): Promise<T | undefined> {
  try {
    return JSON.parse((await kubectl([...args, '-o', 'json'])).stdout) as T;
  } catch (error) {
    if (String(error).includes('NotFound')) return undefined;
    throw error;
  }
}

const waitReady = (plural: string, name: string) =>
  eventually(`${plural}/${name} Ready`, async () => {
    const cr = await getJson<Cr>(['get', '-n', workNs, `${plural}.edgeward.dev`, name]);
    const ready = cr?.status?.conditions?.find((c) => c.type === 'Ready');
    return ready?.status === 'True' && ready.observedGeneration === cr?.metadata.generation ? cr : undefined;
  });

/** A kubeconfig that acts as the ServiceAccount (a token for it), as its pod would. */
async function serviceAccountKubeconfig(serviceAccount: string, namespace: string): Promise<string> {
  const token = (
    await kubectl(['create', 'token', serviceAccount, '-n', namespace, '--duration=1h'])
  ).stdout.trim();
  const admin = JSON.parse(
    (await kubectl(['config', 'view', '--raw', '--minify', '--flatten', '-o', 'json'])).stdout,
  ) as { clusters: { cluster: Record<string, unknown> }[] };
  const file = join(scratch, `${namespace}-${serviceAccount}.kubeconfig`);
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'test', cluster: admin.clusters[0]?.cluster }],
      users: [{ name: serviceAccount, user: { token } }],
      contexts: [{ name: 'sa', context: { cluster: 'test', user: serviceAccount, namespace } }],
      'current-context': 'sa',
    }),
    { mode: 0o600 },
  );
  return file;
}

/**
 * The chart's generate-keys hook, as Helm would run it: its ServiceAccount, Role and RoleBinding
 * applied, then its Job's command (`edgeward ensure-keys` with the Job's args) under that
 * ServiceAccount, then the hook objects deleted (hook-succeeded). Returns the command's lines.
 */
async function runGenerateKeysHook(namespace: string, name: string): Promise<string[]> {
  const hook = documents(
    (
      await helm([
        'template',
        name,
        CHART,
        '--namespace',
        namespace,
        '--show-only',
        'templates/generated-keys-job.yaml',
      ])
    ).stdout,
  );
  const rbac = JSON.stringify({
    apiVersion: 'v1',
    kind: 'List',
    items: hook.filter((o) => o.kind !== 'Job'),
  });
  await kubectl(['apply', '-f', '-'], rbac);
  const [job] = find(hook, 'Job') as Workload[];
  const pod = job?.spec.template.spec;
  if (!pod?.serviceAccountName) throw new Error('the hook Job names no ServiceAccount');
  const saKubeconfig = await serviceAccountKubeconfig(pod.serviceAccountName, namespace);
  const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) =>
    execFile(
      process.execPath,
      ['--import', 'tsx', CLI, ...(pod.containers[0]?.args ?? [])],
      { env: { ...process.env, KUBECONFIG: saKubeconfig } },
      (error, out, err) => (error ? reject(new Error(`${String(error)}\n${err}`)) : resolve({ stdout: out })),
    ),
  );
  await kubectl(['delete', '-f', '-'], rbac);
  return stdout.split('\n').filter(Boolean);
}

/** Names (`kind/name`) of what a release made in a namespace, by its instance label. */
async function releaseObjects(namespace: string, name: string): Promise<string[]> {
  const { stdout } = await kubectl([
    'get',
    '-n',
    namespace,
    'serviceaccounts,secrets,services,deployments,statefulsets,roles,rolebindings',
    '-l',
    `app.kubernetes.io/instance=${name}`,
    '-o',
    'name',
  ]);
  return stdout.split('\n').filter(Boolean).sort();
}

async function clusterObjects(name: string): Promise<string[]> {
  const { stdout } = await kubectl([
    'get',
    'clusterroles,clusterrolebindings,mutatingadmissionpolicies,mutatingadmissionpolicybindings',
    '-l',
    `app.kubernetes.io/instance=${name}`,
    '-o',
    'name',
  ]);
  return stdout.split('\n').filter(Boolean).sort();
}

async function stopOperator(): Promise<void> {
  const child = operator;
  operator = undefined;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

beforeAll(async () => {
  kubeconfig = inject('kubeconfig');
  scratch = mkdtempSync(join(tmpdir(), 'edgeward-chart-'));
  const crds = join(ROOT, 'crds');
  await kubectl(['apply', '-f', crds]);
  await kubectl(['wait', '--for=condition=Established', '--timeout=60s', '-f', crds]);
  for (const namespace of [releaseNs, operatorNs, workNs]) await kubectl(['create', 'namespace', namespace]);
});

afterAll(async () => {
  await stopOperator();
  await edgeProcess?.kill();
  // Finalizers would hold the CRs (and their namespace) forever without an operator.
  for (const plural of ['botusers', 'ippolicies', 'tlsedges', 'tunnelcredentials']) {
    const { stdout } = await kubectl(['get', '-n', workNs, `${plural}.edgeward.dev`, '-o', 'name']).catch(
      () => ({
        stdout: '',
      }),
    );
    for (const name of stdout.split('\n').filter(Boolean)) {
      await kubectl([
        'patch',
        '-n',
        workNs,
        name,
        '--type=merge',
        '-p',
        '{"metadata":{"finalizers":null}}',
      ]).catch(() => undefined);
    }
  }
  for (const [name, namespace] of installed) {
    await helm(['uninstall', name, '--namespace', namespace]).catch(() => undefined);
  }
  for (const namespace of [releaseNs, operatorNs, workNs]) {
    await kubectl(['delete', 'namespace', namespace, '--wait=false']).catch(() => undefined);
  }
  await t?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('Helm chart and kustomize config', () => {
  it('ships the generated CRDs unchanged and the package version as appVersion', () => {
    const top = join(ROOT, 'crds');
    const copy = join(CHART, 'files/crds');
    const listing = (dir: string) => readdirSync(dir).sort();
    expect(listing(copy)).toEqual(listing(top));
    expect(listing(top).filter((file) => file.endsWith('.edgeward.dev.yaml'))).toHaveLength(18);
    for (const file of listing(top)) {
      // A differing copy means `npm run crds` was not run.
      expect(readFileSync(join(copy, file), 'utf8'), `charts/edgeward/files/crds/${file}`).toBe(
        readFileSync(join(top, file), 'utf8'),
      );
    }
    const chart = documents(readFileSync(join(CHART, 'Chart.yaml'), 'utf8'))[0] as unknown as Record<
      string,
      string
    >;
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(chart).toMatchObject({
      apiVersion: 'v2',
      name: 'edgeward',
      version: '0.1.0',
      appVersion: pkg.version,
    });
  });

  it('lints, and refuses a missing operator.apiUrl and values of the wrong type', async () => {
    await helm(['lint', '--strict', CHART]);
    await helm([
      'lint',
      '--strict',
      CHART,
      '--set',
      'server.enabled=false',
      '--set',
      'operator.apiUrl=https://edgeward.example.com',
      '--set',
      'operator.apiKey.existingSecret=edgeward-api-key',
      '--set',
      'edge.edgeKey.existingSecret=edgeward-edge-key',
    ]);

    await expect(template(releaseNs, ['server.enabled=false'])).rejects.toThrow(
      /operator\.apiUrl is required when server\.enabled is false/,
    );
    await expect(
      template(releaseNs, ['server.enabled=false', 'operator.apiUrl=https://edgeward.example.com']),
    ).rejects.toThrow(/operator\.apiKey is required when server\.enabled is false/);
    await expect(template(releaseNs, ['operator.replicas=2', 'operator.leaderElect=false'])).rejects.toThrow(
      /operator\.replicas > 1 needs operator\.leaderElect/,
    );
    // Edges next to a server elsewhere need that server's edge key; a grace period must outlast the drain.
    await expect(
      template(releaseNs, [
        'server.enabled=false',
        'operator.apiUrl=https://edgeward.example.com',
        'operator.apiKey.existingSecret=edgeward-api-key',
      ]),
    ).rejects.toThrow(/edge\.edgeKey\.existingSecret is required when server\.enabled is false/);
    await expect(template(releaseNs, ['edge.drainTimeout=30'])).rejects.toThrow(
      /edge\.terminationGracePeriodSeconds must be larger than edge\.drainDelay \+ edge\.drainTimeout/,
    );
    // The grace period covers the delay too: 5 + 25 leaves the kubelet no margin.
    await expect(template(releaseNs, ['edge.drainTimeout=25'])).rejects.toThrow(
      /edge\.drainDelay \+ edge\.drainTimeout/,
    );
    await expect(template(releaseNs, ['edge.drainTimeout=24'])).resolves.toContain('--drain-timeout=24');
    await expect(template(releaseNs, ['edge.tunnel.service.enabled=false'])).rejects.toThrow(
      /operator\.edge\.addr is required when edge\.tunnel\.service\.enabled is false/,
    );
    // values.schema.json: in `helm template` and in `helm lint`.
    await expect(template(releaseNs, ['operator.replicas=two'])).rejects.toThrow(/\/operator\/replicas/);
    await expect(lintOutput(['--set', 'operator.replicas=two'])).resolves.toMatch(/\/operator\/replicas/);
    await expect(template(releaseNs, ['server.persistence.enabled=maybe'])).rejects.toThrow(
      /\/server\/persistence\/enabled/,
    );
    await expect(template(releaseNs, ['operator.watchNamespaces[0]=Not_A_Namespace'])).rejects.toThrow(
      /\/operator\/watchNamespaces\/0/,
    );
    await expect(template(releaseNs, ['operator.unknownKey=1'])).rejects.toThrow(/unknownKey/);
    await expect(template(releaseNs, ['edge.tcpPortRange=all'])).rejects.toThrow(/\/edge\/tcpPortRange/);
    await expect(template(releaseNs, ['edge.service.type=Ingress'])).rejects.toThrow(/\/edge\/service\/type/);
    await expect(template(releaseNs, ['operator.edge.addr=no-port'])).rejects.toThrow(
      /\/operator\/edge\/addr/,
    );
  });

  it('renders objects the apiserver accepts: defaults, with CRDs, the generated keys and the edge', async () => {
    const rendered = await template(releaseNs, [], ['--include-crds']);
    const objects = documents(rendered);
    const lines = await dryRun(rendered);
    expect(lines).toHaveLength(objects.length);
    for (const line of lines) expect(line).toMatch(/ (created|configured|unchanged) \(server dry run\)$/);
    expect(find(objects, 'CustomResourceDefinition')).toHaveLength(18);
    const kinds = objects
      .filter((o) => o.kind !== 'CustomResourceDefinition')
      .map((o) => `${o.kind}/${o.metadata.name}`);
    const prefix = `${release}-edgeward`;
    expect(kinds.sort()).toEqual(
      [
        `ClusterRole/${prefix}-operator`,
        `ClusterRoleBinding/${prefix}-operator`,
        `Deployment/${prefix}-edge`,
        `Deployment/${prefix}-operator`,
        `Job/${prefix}-generate-keys`,
        `PodDisruptionBudget/${prefix}-edge`,
        `PodDisruptionBudget/${prefix}-operator`,
        `Role/${prefix}-generate-keys`,
        `Role/${prefix}-operator-leader-election`,
        `RoleBinding/${prefix}-generate-keys`,
        `RoleBinding/${prefix}-operator-leader-election`,
        `Service/${prefix}-edge`,
        `Service/${prefix}-edge-metrics`,
        `Service/${prefix}-operator-metrics`,
        `Service/${prefix}-server`,
        `Service/${prefix}-server-headless`,
        `ServiceAccount/${prefix}-generate-keys`,
        `ServiceAccount/${prefix}-operator`,
        `StatefulSet/${prefix}-server`,
      ].sort(),
    );
    for (const object of objects.filter((o) => o.kind !== 'CustomResourceDefinition')) {
      expect(object.metadata.labels).toMatchObject({
        'app.kubernetes.io/name': 'edgeward',
        'app.kubernetes.io/instance': release,
        'app.kubernetes.io/managed-by': 'Helm',
        'helm.sh/chart': 'edgeward-0.1.0',
      });
    }
    const hardened = {
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    };
    const container = podOf(objects, 'Deployment', `${prefix}-operator`).containers[0];
    expect(container?.args).toEqual(
      expect.arrayContaining([
        'operator',
        `--api-url=http://${prefix}-server.${releaseNs}.svc:4040`,
        '--api-key-file=/etc/edgeward/api-key/admin-api-key',
        '--leader-elect',
        // The operator's Tunnels dial the edge Service and trust the generated tunnel certificate.
        `--edge-addr=${prefix}-edge.${releaseNs}.svc:4443`,
        '--edge-ca=/etc/edgeward/edge-ca/tls.crt',
      ]),
    );
    expect(container?.securityContext).toMatchObject(hardened);
    // Two operator replicas, each carrying the Tunnels: spread over nodes where it can, and evicted
    // one at a time.
    const operatorDeployment = find(objects, 'Deployment', `${prefix}-operator`)[0] as unknown as {
      spec: { replicas: number; template: { spec: { affinity?: unknown } } };
    };
    const operatorSelector = {
      'app.kubernetes.io/name': 'edgeward',
      'app.kubernetes.io/instance': release,
      'app.kubernetes.io/component': 'operator',
    };
    expect(operatorDeployment.spec.replicas).toBe(2);
    expect(operatorDeployment.spec.template.spec.affinity).toEqual({
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 100,
            podAffinityTerm: {
              topologyKey: 'kubernetes.io/hostname',
              labelSelector: { matchLabels: operatorSelector },
            },
          },
        ],
      },
    });
    expect(find(objects, 'PodDisruptionBudget', `${prefix}-operator`)[0]?.spec).toEqual({
      maxUnavailable: 1,
      selector: { matchLabels: operatorSelector },
    });
    const affinityOf = async (values: string[]) =>
      (
        find(
          documents(await template(releaseNs, values)),
          'Deployment',
          `${prefix}-operator`,
        )[0] as unknown as {
          spec: { template: { spec: { affinity?: Record<string, unknown> } } };
        }
      ).spec.template.spec.affinity;
    expect(await affinityOf(['operator.podAntiAffinity=hard'])).toEqual({
      podAntiAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [
          { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: operatorSelector } },
        ],
      },
    });
    expect(await affinityOf(['operator.podAntiAffinity='])).toBeUndefined();
    expect(await affinityOf(['operator.affinity.nodeAffinity.x=1'])).toEqual({ nodeAffinity: { x: 1 } });
    const single = documents(
      await template(releaseNs, ['operator.replicas=1', 'operator.podDisruptionBudget.enabled=false']),
    );
    expect(find(single, 'PodDisruptionBudget', `${prefix}-operator`)).toEqual([]);
    // The keys nobody gave the chart are made by a pre-install/pre-upgrade hook, not rendered.
    const hook = podOf(objects, 'Job', `${prefix}-generate-keys`);
    expect(hook.containers[0]?.args).toEqual([
      'ensure-keys',
      `--namespace=${releaseNs}`,
      `--secret=${prefix}-server-admin-key/admin-api-key=ewk_`,
      `--secret=${prefix}-edge-key/edge-key=ewedge_`,
      // One tunnel certificate and one SSH host key for every edge pod, made once.
      `--tls-secret=${prefix}-edge-tunnel-tls`,
      `--tls-name=${prefix}-edge.${releaseNs}.svc`,
      `--tls-name=${prefix}-edge.${releaseNs}.svc.cluster.local`,
      `--tls-name=${prefix}-edge.${releaseNs}`,
      `--tls-name=${prefix}-edge`,
      `--ssh-host-key-secret=${prefix}-edge-ssh-host-key/ssh_host_ecdsa_key`,
      '--label=app.kubernetes.io/name=edgeward',
      `--label=app.kubernetes.io/instance=${release}`,
      '--label=app.kubernetes.io/part-of=edgeward',
      '--label=app.kubernetes.io/managed-by=edgeward',
    ]);
    expect(hook.containers[0]?.securityContext).toMatchObject(hardened);
    for (const kind of ['ServiceAccount', 'Role', 'RoleBinding', 'Job']) {
      const [hookObject] = find(objects, kind, `${prefix}-generate-keys`);
      expect(hookObject?.metadata.annotations).toMatchObject({
        'helm.sh/hook': 'pre-install,pre-upgrade',
        'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded',
      });
    }
    expect(find(objects, 'Secret')).toEqual([]);

    // The edge: `edgeward edge` against the in-cluster server, hardened like the server, its
    // certificate generated in an emptyDir for the Service's names, probes on the metrics port.
    const edgePod = podOf(objects, 'Deployment', `${prefix}-edge`);
    const edge = edgePod.containers[0];
    expect(edge?.args).toEqual([
      'edge',
      `--api-url=http://${prefix}-server.${releaseNs}.svc:4040`,
      '--data-dir=/data',
      '--tunnel-addr=:4443',
      '--tls-addr=:8443',
      '--http-addr=:8080',
      '--https-redirect-port=443',
      '--ssh-addr=:2222',
      '--tcp-host=0.0.0.0',
      '--region=us',
      '--metrics-addr=:9464',
      '--drain-delay=5',
      '--drain-timeout=10',
      '--relay-addr=:4446',
      '--advertise-relay-addr=$(POD_IP):4446',
      '--ssh-host-key=/etc/edgeward/ssh-host-key/ssh_host_ecdsa_key',
      '--tunnel-cert=/etc/edgeward/tunnel-tls/tls.crt',
      '--tunnel-key=/etc/edgeward/tunnel-tls/tls.key',
    ]);
    // Two edges, each relaying for the other, spread over nodes and evicted one at a time.
    const [edgeDeployment] = find(objects, 'Deployment', `${prefix}-edge`) as Workload[];
    expect(edgeDeployment?.spec.replicas).toBe(2);
    const edgeSelector = {
      'app.kubernetes.io/name': 'edgeward',
      'app.kubernetes.io/instance': release,
      'app.kubernetes.io/component': 'edge',
    };
    expect(edgePod.affinity).toEqual({
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 100,
            podAffinityTerm: {
              topologyKey: 'kubernetes.io/hostname',
              labelSelector: { matchLabels: edgeSelector },
            },
          },
        ],
      },
    });
    const [edgeBudget] = find(objects, 'PodDisruptionBudget', `${prefix}-edge`);
    expect(edgeBudget?.spec).toEqual({ maxUnavailable: 1, selector: { matchLabels: edgeSelector } });
    expect(edge?.env).toContainEqual({
      name: 'POD_IP',
      valueFrom: { fieldRef: { fieldPath: 'status.podIP' } },
    });
    expect(edge?.ports?.find((port) => port.name === 'relay')).toEqual({
      name: 'relay',
      containerPort: 4446,
      protocol: 'TCP',
    });
    // Not advertised by default: an agent outside the cluster would keep dialing a pod IP.
    expect(edge?.args.some((arg) => arg.startsWith('--advertise-tunnel-addr'))).toBe(false);
    // The readiness probe sees /readyz fail within the 5 s drain delay.
    expect(edge?.readinessProbe).toMatchObject({ periodSeconds: 2, failureThreshold: 1 });
    // Every pod mounts the same generated certificate and host key; the operator trusts that certificate.
    expect(edgePod.volumes?.find((volume) => volume.name === 'tunnel-tls')?.secret?.secretName).toBe(
      `${prefix}-edge-tunnel-tls`,
    );
    expect(edgePod.volumes?.find((volume) => volume.name === 'ssh-host-key')?.secret?.secretName).toBe(
      `${prefix}-edge-ssh-host-key`,
    );
    expect(podOf(objects, 'Deployment', `${prefix}-operator`).containers[0]?.args).toEqual(
      expect.arrayContaining([
        '--edge-ca=/etc/edgeward/edge-ca/tls.crt',
        `--edge-server-name=${prefix}-edge.${releaseNs}.svc`,
      ]),
    );
    expect(edge?.securityContext).toMatchObject(hardened);
    expect(edgePod.volumes?.find((volume) => volume.name === 'data')).toEqual({ name: 'data', emptyDir: {} });
    expect(edge?.volumeMounts).toContainEqual({ name: 'data', mountPath: '/data' });
    expect(edgePod.hostNetwork).toBeUndefined();
    expect(edge?.ports?.map((port) => port.hostPort)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(edgePod.automountServiceAccountToken).toBe(false);
    expect(edgePod.terminationGracePeriodSeconds).toBeGreaterThan(10);
    expect(edge?.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(edge?.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
    expect(edge?.ports?.find((port) => port.name === 'metrics')?.containerPort).toBe(9464);
    // One Secret, read by both sides.
    const edgeKeyRef = { secretKeyRef: { name: `${prefix}-edge-key`, key: 'edge-key' } };
    expect(edge?.env).toContainEqual({ name: 'EDGEWARD_EDGE_KEY', valueFrom: edgeKeyRef });
    expect(podOf(objects, 'StatefulSet', `${prefix}-server`).containers[0]?.env).toContainEqual({
      name: 'EDGEWARD_EDGE_KEY',
      valueFrom: edgeKeyRef,
    });
    const [service] = find(objects, 'Service', `${prefix}-edge`) as ServiceObject[];
    expect(service?.spec.type).toBe('LoadBalancer');
    expect(service?.spec.externalTrafficPolicy).toBe('Local');
    // Any edge serves any connection: no session affinity, and the relay port is not public.
    expect(service?.spec.sessionAffinity).toBeUndefined();
    expect(service?.spec.ports).toEqual([
      { name: 'tunnel', port: 4443, targetPort: 'tunnel', protocol: 'TCP' },
      { name: 'tls', port: 443, targetPort: 'tls', protocol: 'TCP' },
      // ACME HTTP-01 answers, and a redirect to HTTPS for everything else.
      { name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' },
      { name: 'ssh', port: 2222, targetPort: 'ssh', protocol: 'TCP' },
    ]);
    const [metrics] = find(objects, 'Service', `${prefix}-edge-metrics`) as ServiceObject[];
    expect(metrics?.spec).toMatchObject({
      type: 'ClusterIP',
      selector: { 'app.kubernetes.io/component': 'edge' },
      ports: [{ name: 'metrics', port: 9464, targetPort: 'metrics' }],
    });
  });

  it('renders the same output every time under helm template (Argo CD): no random value in any template', async () => {
    for (const set of [[], ['edge.enabled=false'], ['server.adminApiKey.existingSecret=admin-key']]) {
      const first = await template(releaseNs, set, ['--include-crds']);
      const second = await template(releaseNs, set, ['--include-crds']);
      expect(second).toBe(first);
    }
  });

  it('renders the uninstall cleanup hook (pre-delete, edgeward cleanup) with exactly the rights it needs', async () => {
    expect(find(documents(await template(releaseNs)), 'Job', `${release}-edgeward-cleanup`)).toEqual([]);
    await expect(template(releaseNs, ['uninstall.cleanup=everything'])).rejects.toThrow(/uninstall.cleanup/);
    const prefix = `${release}-edgeward`;
    const hookOnly = ['--show-only', 'templates/cleanup-job.yaml'];
    const objects = documents(await template(releaseNs, ['uninstall.cleanup=delete'], hookOnly));
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual(
      ['ClusterRole', 'ClusterRoleBinding', 'Job', 'ServiceAccount'].map(
        (kind) => `${kind}/${prefix}-cleanup`,
      ),
    );
    for (const object of objects) expect(object.metadata.annotations?.['helm.sh/hook']).toBe('pre-delete');
    expect(podOf(objects, 'Job', `${prefix}-cleanup`).containers[0]?.args).toEqual([
      'cleanup',
      '--mode=delete',
      '--timeout=300',
    ]);
    // The hook's RBAC in the apiserver: what cleanup does to edgeward objects, nothing else.
    const rbac = JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: objects.filter((o) => o.kind !== 'Job'),
    });
    await kubectl(['apply', '-f', '-'], rbac);
    try {
      const sa = `${prefix}-cleanup`;
      expect(await canI(sa, releaseNs, 'list', 'tlsedges.edgeward.dev', ['--all-namespaces'])).toBe(true);
      expect(await canI(sa, releaseNs, 'patch', 'ippolicies.edgeward.dev', ['-n', workNs])).toBe(true);
      expect(await canI(sa, releaseNs, 'delete', 'tunnels.edgeward.dev', ['-n', workNs])).toBe(true);
      expect(await canI(sa, releaseNs, 'get', 'secrets', ['-n', workNs])).toBe(false);
      expect(
        await canI(sa, releaseNs, 'update', 'tlsedges.edgeward.dev', ['--subresource=status', '-n', workNs]),
      ).toBe(false);
    } finally {
      await kubectl(['delete', '-f', '-'], rbac);
    }
    // With watched namespaces: a Role in each, and the Job cleans only those.
    const scoped = documents(
      await template(
        releaseNs,
        ['uninstall.cleanup=orphan', `operator.watchNamespaces[0]=${workNs}`],
        hookOnly,
      ),
    );
    expect(find(scoped, 'ClusterRole')).toEqual([]);
    expect(find(scoped, 'Role').map((role) => role.metadata.namespace)).toEqual([workNs]);
    expect(podOf(scoped, 'Job', `${prefix}-cleanup`).containers[0]?.args).toEqual([
      'cleanup',
      '--mode=orphan',
      `--namespace=${workNs}`,
      '--timeout=300',
    ]);
  });

  it('renders the finalizer policy only where the API server has it, bound to the watched namespaces', async () => {
    const capability = ['--api-versions', 'admissionregistration.k8s.io/v1/MutatingAdmissionPolicy'];
    const bound = documents(await template(releaseNs, [`operator.watchNamespaces[0]=${workNs}`], capability));
    const [policy] = find(bound, 'MutatingAdmissionPolicy', `${release}-edgeward-finalizer`);
    expect(policy?.spec).toEqual((finalizerPolicy(OPERATOR_KINDS) as KubeObject).spec);
    const [binding] = find(bound, 'MutatingAdmissionPolicyBinding', `${release}-edgeward-finalizer`);
    expect(binding?.spec).toEqual({
      policyName: `${release}-edgeward-finalizer`,
      matchResources: {
        namespaceSelector: {
          matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [workNs] }],
        },
      },
    });
    // Everywhere when every namespace is watched; none on an older API server, or when turned off.
    const everywhere = find(
      documents(await template(releaseNs, [], capability)),
      'MutatingAdmissionPolicyBinding',
    );
    expect(everywhere[0]?.spec).toEqual({ policyName: `${release}-edgeward-finalizer` });
    for (const rendered of [
      await template(releaseNs),
      await template(releaseNs, ['operator.finalizerPolicy=false'], capability),
    ]) {
      expect(find(documents(rendered), 'MutatingAdmissionPolicy')).toEqual([]);
      expect(find(documents(rendered), 'MutatingAdmissionPolicyBinding')).toEqual([]);
    }
  });

  it('renders one Role per watched namespace and no ClusterRole with operator.watchNamespaces', async () => {
    const rendered = await template(releaseNs, [
      `operator.watchNamespaces[0]=${workNs}`,
      `operator.watchNamespaces[1]=${operatorNs}`,
      'operator.metrics.serviceMonitor.enabled=false',
    ]);
    const objects = documents(rendered);
    expect(await dryRun(rendered)).toHaveLength(objects.length);
    expect(find(objects, 'ClusterRole')).toEqual([]);
    expect(find(objects, 'ClusterRoleBinding')).toEqual([]);
    const roles = find(objects, 'Role', `${release}-edgeward-operator`);
    expect(roles.map((role) => role.metadata.namespace).sort()).toEqual([operatorNs, workNs].sort());
    const deployment = JSON.stringify(find(objects, 'Deployment', `${release}-edgeward-operator`)[0]);
    expect(deployment).toContain(`--watch-namespaces=${workNs},${operatorNs}`);
    // The same rules as the cluster-wide install.
    const clusterWide = documents(await template(releaseNs));
    expect(roles[0]?.rules).toEqual(rulesOf(clusterWide, 'ClusterRole', `${release}-edgeward-operator`));
  });

  it('renders the optional parts: ServiceMonitor, PostgreSQL, existing Secrets, no persistence, the IngressClass', async () => {
    const rendered = await template(releaseNs, [
      'operator.metrics.serviceMonitor.enabled=true',
      'operator.metrics.serviceMonitor.labels.release=prometheus',
      'operator.apiKey.existingSecret=operator-key',
      'operator.apiKey.key=token',
      'server.adminApiKey.existingSecret=admin-key',
      'edge.edgeKey.existingSecret=edge-key',
      'server.database.existingSecret=edgeward-db',
      'server.secretKey.existingSecret=edgeward-sealing',
      'server.persistence.enabled=false',
      'server.rateLimit=0',
      'ingressClass.enabled=true',
      'server.acme.directoryUrl=https://acme.example.com/directory',
      'server.acme.email=certificates@example.com',
      'server.acme.caBundle.existingSecret=acme-ca',
    ]);
    const objects = documents(rendered);
    const [monitor] = find(objects, 'ServiceMonitor');
    // The IngressClass edgeward, off by default (cluster-scoped: one release per cluster makes it).
    expect(find(objects, 'IngressClass', 'edgeward').map((o) => (o as { spec?: unknown }).spec)).toEqual([
      { controller: 'edgeward.dev/ingress-controller' },
    ]);
    expect(monitor?.metadata.labels).toMatchObject({ release: 'prometheus' });
    // Existing Secrets are referenced, not made.
    expect(find(objects, 'Secret')).toEqual([]);
    const text = JSON.stringify(objects);
    expect(text).toContain('"--database-url=$(EDGEWARD_DATABASE_URL)"');
    expect(text).toContain('"--rate-limit=0"');
    // ACME: the CA, the contact, the challenges, and a private CA's bundle mounted from its Secret.
    const server = podOf(objects, 'StatefulSet', `${release}-edgeward-server`);
    expect(server.containers[0]?.args).toEqual(
      expect.arrayContaining([
        '--acme-directory-url=https://acme.example.com/directory',
        '--acme-email=certificates@example.com',
        '--acme-challenges=tls-alpn-01,http-01',
        '--acme-ca-bundle=/etc/edgeward/acme-ca/ca.crt',
      ]),
    );
    expect(server.volumes?.find((volume) => volume.name === 'acme-ca')?.secret?.secretName).toBe('acme-ca');
    expect(text).toContain('"--api-key-file=/etc/edgeward/api-key/token"');
    expect(text).toContain('"secretName":"operator-key"');
    expect(text).not.toContain('volumeClaimTemplates');
    // No ServiceMonitor CRD here: everything else goes through the dry run.
    const rest = objects.filter((object) => object.kind !== 'ServiceMonitor');
    expect(await dryRun(JSON.stringify({ apiVersion: 'v1', kind: 'List', items: rest }))).toHaveLength(
      rest.length,
    );
    await expect(
      template(releaseNs, [
        'operator.metrics.serviceMonitor.enabled=true',
        'operator.metrics.service.enabled=false',
      ]),
    ).rejects.toThrow(/serviceMonitor\.enabled needs operator\.metrics\.service\.enabled/);
    await expect(
      template(releaseNs, ['server.acme.directoryUrl=https://acme.example.com/directory']),
    ).rejects.toThrow(/server\.acme\.email is required/);
  });

  it('renders the edge options: existing Secrets (stable output), hostNetwork, PDB, ServiceMonitor; none when disabled', async () => {
    const prefix = `${release}-edgeward`;
    const set = [
      'server.adminApiKey.existingSecret=admin-key',
      'edge.edgeKey.existingSecret=edge-key',
      'edge.tunnelCertificate.existingSecret=edge-tunnel-tls',
      'edge.tunnelNames[0]=edge.example.com',
      'edge.tunnelNames[1]=tunnel.example.com',
      'edge.sshHostKey.existingSecret=edge-ssh',
      'edge.hostNetwork=true',
      'edge.tcpPortRange=20000-29999',
      'edge.service.type=NodePort',
      'edge.tunnel.service.nodePort=30443',
      'edge.ssh.enabled=false',
      'edge.podDisruptionBudget.minAvailable=1',
      'edge.podDisruptionBudget.maxUnavailable=null',
      'edge.advertiseTunnelAddr=true',
      'edge.metrics.serviceMonitor.enabled=true',
    ];
    const rendered = await template(releaseNs, set);
    // Nothing random is rendered once every key comes from an existing Secret (Argo CD, GitOps).
    expect(await template(releaseNs, set)).toBe(rendered);
    const objects = documents(rendered);
    expect(find(objects, 'Secret')).toEqual([]);

    const pod = podOf(objects, 'Deployment', `${prefix}-edge`);
    const edge = pod.containers[0];
    expect(edge?.args).toEqual(
      expect.arrayContaining([
        '--tunnel-cert=/etc/edgeward/tunnel-tls/tls.crt',
        '--tunnel-key=/etc/edgeward/tunnel-tls/tls.key',
        '--tcp-port-range=20000-29999',
        '--ssh-addr=off',
      ]),
    );
    expect(edge?.args.some((arg) => arg.startsWith('--tunnel-name'))).toBe(false);
    expect(edge?.env).toContainEqual({
      name: 'EDGEWARD_EDGE_KEY',
      valueFrom: { secretKeyRef: { name: 'edge-key', key: 'edge-key' } },
    });
    // SSH off: no host key mounted, none generated.
    expect(edge?.args.some((arg) => arg.startsWith('--ssh-host-key'))).toBe(false);
    // hostNetwork: other edges (and, advertised, agents) reach the node's address.
    expect(edge?.env).toContainEqual({
      name: 'POD_IP',
      valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } },
    });
    expect(edge?.args).toContain('--advertise-tunnel-addr=$(POD_IP):4443');
    expect(edge?.ports?.find((port) => port.name === 'relay')?.hostPort).toBe(4446);
    // hostNetwork: the node's network namespace, cluster DNS kept, one pod at a time per node.
    expect(pod.hostNetwork).toBe(true);
    expect(pod.dnsPolicy).toBe('ClusterFirstWithHostNet');
    const [deployment] = find(objects, 'Deployment', `${prefix}-edge`) as Workload[];
    expect(deployment?.spec.strategy).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: 0, maxUnavailable: 1 },
    });
    const [service] = find(objects, 'Service', `${prefix}-edge`) as ServiceObject[];
    expect(service?.spec.ports.map((port) => `${port.name}:${port.port}:${port.nodePort ?? '-'}`)).toEqual([
      'tunnel:4443:30443',
      'tls:443:-',
      'http:80:-',
    ]);

    // The operator trusts the tunnel certificate Secret's certificate (only that key is mounted:
    // the private key stays out of its pod) for the first tunnel name.
    const operatorPod = podOf(objects, 'Deployment', `${prefix}-operator`);
    expect(operatorPod.containers[0]?.args).toEqual(
      expect.arrayContaining([
        `--edge-addr=${prefix}-edge.${releaseNs}.svc:4443`,
        '--edge-ca=/etc/edgeward/edge-ca/tls.crt',
        '--edge-server-name=edge.example.com',
      ]),
    );
    expect(operatorPod.volumes?.find((volume) => volume.name === 'edge-ca')?.secret).toEqual({
      secretName: 'edge-tunnel-tls',
      items: [{ key: 'tls.crt', path: 'tls.crt' }],
    });

    const [budget] = find(objects, 'PodDisruptionBudget', `${prefix}-edge`);
    expect(budget?.spec).toMatchObject({ minAvailable: 1 });
    const [monitor] = find(objects, 'ServiceMonitor', `${prefix}-edge`) as unknown as {
      spec: { selector: { matchLabels: Record<string, string> } };
    }[];
    expect(monitor?.spec.selector.matchLabels).toMatchObject({
      'app.kubernetes.io/component': 'edge',
      'edgeward.dev/service': 'metrics',
    });
    const [metricsService] = find(objects, 'Service', `${prefix}-edge-metrics`);
    expect(metricsService?.metadata.labels).toMatchObject(monitor?.spec.selector.matchLabels ?? {});
    expect(service?.metadata.labels?.['edgeward.dev/service']).toBeUndefined();

    // The apiserver accepts it all (no ServiceMonitor CRD here); with hostNetwork each declared port
    // is also a hostPort, so the scheduler keeps two edges off one node.
    const rest = objects.filter((object) => object.kind !== 'ServiceMonitor');
    const { stdout } = await kubectl(
      ['apply', '--dry-run=server', '--validate=strict', '-o', 'json', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: rest }),
    );
    const accepted = (JSON.parse(stdout) as { items: KubeObject[] }).items;
    expect(accepted).toHaveLength(rest.length);
    expect(
      podOf(accepted, 'Deployment', `${prefix}-edge`).containers[0]?.ports?.map(
        (port) => `${port.name}:${port.containerPort}:${port.hostPort}`,
      ),
    ).toEqual([
      'tunnel:4443:4443',
      'tls:8443:8443',
      'http:8080:8080',
      'metrics:9464:9464',
      'relay:4446:4446',
    ]);

    // edge.enabled=false: no edge object, no edge key on the server, no --edge-addr.
    const without = documents(await template(releaseNs, ['edge.enabled=false'])).filter(
      (object) => object.kind !== 'CustomResourceDefinition',
    );
    expect(
      without.filter((object) => object.metadata.labels?.['app.kubernetes.io/component'] === 'edge'),
    ).toEqual([]);
    expect(JSON.stringify(without)).not.toContain('EDGEWARD_EDGE_KEY');
    expect(JSON.stringify(without)).not.toContain('--edge-');
  });

  it('kustomize config/default: accepted by the apiserver, with the chart’s RBAC rules', async () => {
    const { stdout } = await kubectl(['kustomize', join(ROOT, 'config/default')]);
    const objects = documents(stdout);
    expect(find(objects, 'CustomResourceDefinition')).toHaveLength(18);
    expect(find(objects, 'Namespace', 'edgeward-system')).toHaveLength(1);
    expect(find(objects, 'Deployment', 'edgeward-operator')[0]?.metadata.namespace).toBe('edgeward-system');
    // The namespace does not exist here and a dry run does not make it: validate the Namespace on
    // its own, and the rest moved to a namespace that exists (nothing else differs).
    const namespace = find(objects, 'Namespace');
    expect(await dryRun(JSON.stringify({ apiVersion: 'v1', kind: 'List', items: namespace }))).toHaveLength(
      1,
    );
    const rest = objects
      .filter((object) => object.kind !== 'Namespace')
      .map((object) => JSON.parse(JSON.stringify(object).replaceAll('"edgeward-system"', `"${releaseNs}"`)));
    const lines = await dryRun(JSON.stringify({ apiVersion: 'v1', kind: 'List', items: rest }));
    expect(lines).toHaveLength(rest.length);

    const chart = documents(await template(releaseNs));
    expect(rulesOf(objects, 'ClusterRole', 'edgeward-operator')).toEqual(
      rulesOf(chart, 'ClusterRole', `${release}-edgeward-operator`),
    );
    expect(rulesOf(objects, 'Role', 'edgeward-operator-leader-election')).toEqual(
      rulesOf(chart, 'Role', `${release}-edgeward-operator-leader-election`),
    );
    // The Deployments agree on the operator's flags and the pod's security settings.
    const spec = (list: KubeObject[]) =>
      (
        find(list, 'Deployment').find((object) => object.metadata.name.endsWith('-operator')) as unknown as {
          spec: {
            template: {
              spec: { securityContext: unknown; containers: { args: string[]; securityContext: unknown }[] };
            };
          };
        }
      ).spec.template.spec;
    const flagNames = (args: string[] | undefined) => (args ?? []).map((arg) => arg.split('=')[0]);
    expect(flagNames(spec(chart).containers[0]?.args)).toEqual(
      expect.arrayContaining(flagNames(spec(objects).containers[0]?.args)),
    );
    expect(spec(objects).containers[0]?.securityContext).toEqual(spec(chart).containers[0]?.securityContext);
    expect(spec(objects).securityContext).toEqual(spec(chart).securityContext);
  });

  it('installs into a fresh namespace, keeps the generated keys on upgrade, and uninstalls what it made', async () => {
    // The hook Job cannot run here (no kubelet): helm skips hooks, and the test runs the hook's
    // command with the hook's args under the hook's ServiceAccount, as its pod would.
    // The CRDs are the test cluster's (applied from crds/ for every suite): no release may own them.
    await helm([
      'install',
      release,
      CHART,
      '--namespace',
      releaseNs,
      '--no-hooks',
      '--set',
      'crds.install=false',
      // Bound everywhere, the finalizer policy would reach other test files' objects in this
      // shared cluster; the install that watches one namespace below has it.
      '--set',
      'operator.finalizerPolicy=false',
    ]);
    installed.set(release, releaseNs);
    const prefix = `${release}-edgeward`;
    expect(await runGenerateKeysHook(releaseNs, release)).toEqual([
      `secret ${releaseNs}/${prefix}-server-admin-key key admin-api-key: created`,
      `secret ${releaseNs}/${prefix}-edge-key key edge-key: created`,
      `secret ${releaseNs}/${prefix}-edge-tunnel-tls keys tls.crt,tls.key: created`,
      `secret ${releaseNs}/${prefix}-edge-ssh-host-key keys ssh_host_ecdsa_key: created`,
    ]);
    expect(await releaseObjects(releaseNs, release)).toEqual(
      [
        `deployment.apps/${prefix}-edge`,
        `deployment.apps/${prefix}-operator`,
        `role.rbac.authorization.k8s.io/${prefix}-operator-leader-election`,
        `rolebinding.rbac.authorization.k8s.io/${prefix}-operator-leader-election`,
        `secret/${prefix}-edge-key`,
        `secret/${prefix}-edge-ssh-host-key`,
        `secret/${prefix}-edge-tunnel-tls`,
        `secret/${prefix}-server-admin-key`,
        `service/${prefix}-edge`,
        `service/${prefix}-edge-metrics`,
        `service/${prefix}-operator-metrics`,
        `service/${prefix}-server`,
        `service/${prefix}-server-headless`,
        `serviceaccount/${prefix}-operator`,
        `statefulset.apps/${prefix}-server`,
      ].sort(),
    );
    expect(await clusterObjects(release)).toEqual([
      `clusterrole.rbac.authorization.k8s.io/${prefix}-operator`,
      `clusterrolebinding.rbac.authorization.k8s.io/${prefix}-operator`,
    ]);
    const secretValue = async (name: string, key: string) =>
      (await getJson<{ data: Record<string, string> }>(['get', '-n', releaseNs, 'secret', name]))?.data[key];
    const adminKey = () => secretValue(`${prefix}-server-admin-key`, 'admin-api-key');
    const edgeKey = () => secretValue(`${prefix}-edge-key`, 'edge-key');
    const key = await adminKey();
    expect(Buffer.from(key ?? '', 'base64').toString()).toMatch(/^ewk_[A-Za-z0-9_-]{43}$/);
    const firstEdgeKey = await edgeKey();
    expect(Buffer.from(firstEdgeKey ?? '', 'base64').toString()).toMatch(/^ewedge_[A-Za-z0-9_-]{43}$/);
    // The edges' one certificate (for the Service's names, the key beside it) and one host key.
    const tunnelCertificate = () => secretValue(`${prefix}-edge-tunnel-tls`, 'tls.crt');
    const sshHostKey = () => secretValue(`${prefix}-edge-ssh-host-key`, 'ssh_host_ecdsa_key');
    const firstTunnelCertificate = await tunnelCertificate();
    const certificate = new X509Certificate(Buffer.from(firstTunnelCertificate ?? '', 'base64'));
    expect(certificate.checkHost(`${prefix}-edge.${releaseNs}.svc`)).toBe(`${prefix}-edge.${releaseNs}.svc`);
    const tunnelKey = createPrivateKey(
      Buffer.from((await secretValue(`${prefix}-edge-tunnel-tls`, 'tls.key')) ?? '', 'base64').toString(),
    );
    expect(certificate.checkPrivateKey(tunnelKey)).toBe(true);
    const firstSshHostKey = await sshHostKey();
    expect(
      createPrivateKey(Buffer.from(firstSshHostKey ?? '', 'base64').toString()).asymmetricKeyDetails,
    ).toEqual({
      namedCurve: 'prime256v1',
    });

    // Cluster-wide: the operator may read its kinds everywhere, and still not more than it needs.
    const sa = `${prefix}-operator`;
    expect(await canI(sa, releaseNs, 'watch', 'tlsedges.edgeward.dev', ['--all-namespaces'])).toBe(true);
    expect(
      await canI(sa, releaseNs, 'update', 'botusers.edgeward.dev', ['--subresource=status', '-n', workNs]),
    ).toBe(true);
    expect(await canI(sa, releaseNs, 'delete', 'secrets', ['-n', workNs])).toBe(false);
    expect(await canI(sa, releaseNs, 'create', 'pods', ['-n', workNs])).toBe(false);
    expect(await canI(sa, releaseNs, 'update', 'leases', ['-n', workNs])).toBe(false);

    await helm([
      'upgrade',
      release,
      CHART,
      '--namespace',
      releaseNs,
      '--no-hooks',
      '--reuse-values',
      '--set',
      'operator.logLevel=debug',
    ]);
    expect(await runGenerateKeysHook(releaseNs, release)).toEqual([
      `secret ${releaseNs}/${prefix}-server-admin-key key admin-api-key: kept`,
      `secret ${releaseNs}/${prefix}-edge-key key edge-key: kept`,
      `secret ${releaseNs}/${prefix}-edge-tunnel-tls keys tls.crt,tls.key: kept`,
      `secret ${releaseNs}/${prefix}-edge-ssh-host-key keys ssh_host_ecdsa_key: kept`,
    ]);
    expect(await adminKey()).toBe(key);
    expect(await edgeKey()).toBe(firstEdgeKey);
    expect(await tunnelCertificate()).toBe(firstTunnelCertificate);
    expect(await sshHostKey()).toBe(firstSshHostKey);
    const deployment = JSON.stringify(
      await getJson(['get', '-n', releaseNs, 'deployment', `${prefix}-operator`]),
    );
    expect(deployment).toContain('"name":"LOG_LEVEL","value":"debug"');

    await helm(['uninstall', release, '--namespace', releaseNs]);
    installed.delete(release);
    // The generated keys are no release objects: they stay, like the server's volume that trusts them.
    expect(await releaseObjects(releaseNs, release)).toEqual([
      `secret/${prefix}-edge-key`,
      `secret/${prefix}-edge-ssh-host-key`,
      `secret/${prefix}-edge-tunnel-tls`,
      `secret/${prefix}-server-admin-key`,
    ]);
    expect(await clusterObjects(release)).toEqual([]);
    expect((await helm(['list', '--namespace', releaseNs, '-q'])).stdout.trim()).toBe('');
  });

  it('upgrades the CRDs with the release (a changed CRD reaches the apiserver) and keeps them on uninstall', async () => {
    // A copy of the chart whose CRDs are of a group of their own: the test cluster's edgeward.dev
    // CRDs serve every other suite and must not change under them.
    const group = `crds-${suffix}.example`;
    const chart = join(scratch, 'crd-chart');
    cpSync(CHART, chart, { recursive: true });
    const crdDir = join(chart, 'files/crds');
    for (const file of readdirSync(crdDir)) {
      const path = join(crdDir, file);
      if (file === 'tlsedges.edgeward.dev.yaml' || file === 'ippolicies.edgeward.dev.yaml') {
        writeFileSync(path, readFileSync(path, 'utf8').replaceAll('edgeward.dev', group));
      } else {
        rmSync(path);
      }
    }
    const crdRelease = `crds-${suffix}`;
    const only = [
      '--set',
      'server.enabled=false',
      '--set',
      'edge.enabled=false',
      '--set',
      'operator.apiUrl=http://edgeward.invalid',
      '--set',
      'operator.apiKey.value=ewk_not-used-the-operator-never-runs-here',
      '--set',
      'operator.finalizerPolicy=false',
    ];
    const crdNames = [`tlsedges.${group}`, `ippolicies.${group}`];
    const readCrd = (name: string) =>
      getJson<KubeObject & { spec: { names: { categories: string[] } } }>(['get', 'crd', name]);
    try {
      await helm(['install', crdRelease, chart, '--namespace', releaseNs, '--no-hooks', ...only]);
      for (const name of crdNames) {
        const crd = await readCrd(name);
        expect(crd?.metadata.annotations).toMatchObject({
          'helm.sh/resource-policy': 'keep',
          'meta.helm.sh/release-name': crdRelease,
        });
        expect(crd?.spec.names.categories).toEqual(['edgeward']);
      }

      // The next release of the chart changes a CRD: the upgrade applies it.
      const tlsEdges = join(crdDir, 'tlsedges.edgeward.dev.yaml');
      writeFileSync(
        tlsEdges,
        readFileSync(tlsEdges, 'utf8').replace(
          '    categories:\n      - edgeward\n',
          '    categories:\n      - edgeward\n      - edges\n',
        ),
      );
      await helm(['upgrade', crdRelease, chart, '--namespace', releaseNs, '--no-hooks', ...only]);
      expect((await readCrd(`tlsedges.${group}`))?.spec.names.categories).toEqual(['edgeward', 'edges']);
      expect((await readCrd(`ippolicies.${group}`))?.spec.names.categories).toEqual(['edgeward']);

      // Uninstalling leaves the CRDs (deleting one deletes every object of its kind).
      await helm(['uninstall', crdRelease, '--namespace', releaseNs]);
      for (const name of crdNames) expect(await readCrd(name)).toBeDefined();
    } finally {
      await helm(['uninstall', crdRelease, '--namespace', releaseNs]).catch(() => undefined);
      await kubectl(['delete', 'crd', ...crdNames, '--ignore-not-found']);
    }
  });

  it('runs the chart’s edge and operator (RBAC, args, Secrets) until CRs are Ready and a Tunnel is Online', async () => {
    t = await startTestServer();
    const [metricsPort, probePort] = [await freePort(), await freePort()];
    const [tunnelPort, tlsPort, sshPort, edgeMetricsPort, relayPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    // The Secrets the values name, made beforehand: the server's edge key, and a tunnel
    // certificate with a ca.crt (which the chart finds with `lookup` and gives the operator).
    const tunnelName = 'edge.chart.test';
    const certificate = await selfSignedCertificate({
      commonName: tunnelName,
      validDays: 1,
      dnsNames: [tunnelName],
      ips: [],
    });
    const tlsDir = join(scratch, 'tunnel-tls');
    mkdirSync(tlsDir);
    writeFileSync(join(tlsDir, 'tls.crt'), certificate.certificatePem);
    writeFileSync(join(tlsDir, 'tls.key'), certificate.privateKeyPem, { mode: 0o600 });
    writeFileSync(join(tlsDir, 'ca.crt'), certificate.certificatePem);
    await kubectl([
      'create',
      'secret',
      'generic',
      'chart-tunnel-tls',
      '-n',
      operatorNs,
      '--type=kubernetes.io/tls',
      ...['tls.crt', 'tls.key', 'ca.crt'].map((file) => `--from-file=${file}=${join(tlsDir, file)}`),
    ]);
    // The SSH host key in a Secret too: with every key given, the chart renders no hook (it could
    // not run here: no kubelet). The edge process reads the file where the pod would mount it.
    const sshKeyDir = join(scratch, 'ssh-host-key');
    mkdirSync(sshKeyDir, { recursive: true });
    writeFileSync(
      join(sshKeyDir, 'ssh_host_ecdsa_key'),
      generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'sec1', format: 'pem' }),
      { mode: 0o600 },
    );
    await kubectl([
      'create',
      'secret',
      'generic',
      'chart-ssh-host-key',
      '-n',
      operatorNs,
      `--from-file=ssh_host_ecdsa_key=${join(sshKeyDir, 'ssh_host_ecdsa_key')}`,
    ]);
    await kubectl([
      'create',
      'secret',
      'generic',
      'chart-edge-key',
      '-n',
      operatorNs,
      `--from-literal=edge-key=${t.server.edgeKey}`,
    ]);
    await helm([
      'install',
      operatorRelease,
      CHART,
      '--namespace',
      operatorNs,
      '--set',
      'crds.install=false',
      '--set',
      'server.enabled=false',
      '--set',
      `operator.apiUrl=${t.baseUrl}`,
      '--set',
      `operator.apiKey.value=${ADMIN_KEY}`,
      '--set',
      `operator.watchNamespaces[0]=${workNs}`,
      '--set',
      `operator.metrics.port=${metricsPort}`,
      '--set',
      `operator.probePort=${probePort}`,
      ...[
        `edge.apiUrl=${t.baseUrl}`,
        'edge.edgeKey.existingSecret=chart-edge-key',
        'edge.tunnelCertificate.existingSecret=chart-tunnel-tls',
        'edge.sshHostKey.existingSecret=chart-ssh-host-key',
        `edge.tunnelNames[0]=${tunnelName}`,
        `edge.tunnel.containerPort=${tunnelPort}`,
        `edge.tunnel.service.port=${tunnelPort}`,
        `edge.tls.containerPort=${tlsPort}`,
        `edge.ssh.containerPort=${sshPort}`,
        `edge.metrics.port=${edgeMetricsPort}`,
        `edge.relay.containerPort=${relayPort}`,
      ].flatMap((value) => ['--set', value]),
    ]);
    installed.set(operatorRelease, operatorNs);
    const prefix = `${operatorRelease}-edgeward`;
    const serviceAccount = `${prefix}-operator`;
    // Cluster-scoped, yet only for the watched namespace: the finalizer policy and its binding.
    expect(await clusterObjects(operatorRelease)).toEqual([
      `mutatingadmissionpolicy.admissionregistration.k8s.io/${prefix}-finalizer`,
      `mutatingadmissionpolicybinding.admissionregistration.k8s.io/${prefix}-finalizer`,
    ]);

    // The pod's view: its ServiceAccount token, the API key from the chart's Secret, the chart's args.
    const saKubeconfig = await serviceAccountKubeconfig(serviceAccount, operatorNs);
    const apiKeySecret = await getJson<{ data: Record<string, string> }>([
      'get',
      '-n',
      operatorNs,
      'secret',
      `${prefix}-operator-api-key`,
    ]);
    const apiKeyFile = join(scratch, 'api-key');
    writeFileSync(apiKeyFile, Buffer.from(apiKeySecret?.data['api-key'] ?? '', 'base64'), { mode: 0o600 });
    const deployment = await getJson<{
      spec: {
        template: { spec: { containers: { args: string[]; env: { name: string; value?: string }[] }[] } };
      };
    }>(['get', '-n', operatorNs, 'deployment', serviceAccount]);
    const container = deployment?.spec.template.spec.containers[0];
    expect(container?.args).toEqual(
      expect.arrayContaining([
        `--edge-addr=${prefix}-edge.${operatorNs}.svc:${tunnelPort}`,
        '--edge-ca=/etc/edgeward/edge-ca/ca.crt',
        `--edge-server-name=${tunnelName}`,
      ]),
    );
    // Files where the pod mounts them; the edge Service's name is not resolvable here.
    const args = (container?.args ?? []).map((arg) => {
      if (arg.startsWith('--api-key-file=')) return `--api-key-file=${apiKeyFile}`;
      if (arg.startsWith('--edge-ca=')) return `--edge-ca=${join(tlsDir, 'ca.crt')}`;
      if (arg.startsWith('--edge-addr=')) return `--edge-addr=127.0.0.1:${tunnelPort}`;
      return arg;
    });
    expect(args).toEqual(
      expect.arrayContaining([
        'operator',
        '--leader-elect',
        `--watch-namespaces=${workNs}`,
        '--gateway-api=off',
      ]),
    );
    const logLevel = container?.env.find((env) => env.name === 'LOG_LEVEL')?.value ?? 'info';

    // The edge as its pod would run it: the chart's arguments and the key from the Secret it names.
    const edgeDeployment = await getJson<Workload>(['get', '-n', operatorNs, 'deployment', `${prefix}-edge`]);
    const edgeContainer = edgeDeployment?.spec.template.spec.containers[0];
    const keyRef = edgeContainer?.env?.find((env) => env.name === 'EDGEWARD_EDGE_KEY')?.valueFrom
      ?.secretKeyRef;
    expect(keyRef).toEqual({ name: 'chart-edge-key', key: 'edge-key' });
    const keySecret = await getJson<{ data: Record<string, string> }>([
      'get',
      '-n',
      operatorNs,
      'secret',
      keyRef?.name ?? '',
    ]);
    const edgeArgs = (edgeContainer?.args ?? []).map((arg) => {
      if (arg === '--data-dir=/data') return `--data-dir=${join(scratch, 'edge-data')}`;
      return arg
        .replace('/etc/edgeward/tunnel-tls/', `${tlsDir}/`)
        .replace('/etc/edgeward/ssh-host-key/', `${sshKeyDir}/`)
        .replace('$(POD_IP)', '127.0.0.1'); // as the kubelet expands it from the downward API
    });
    expect(edgeArgs).toContain(`--advertise-relay-addr=127.0.0.1:${relayPort}`);
    edgeProcess = spawnCli(edgeArgs, {
      EDGEWARD_EDGE_KEY: Buffer.from(keySecret?.data[keyRef?.key ?? ''] ?? '', 'base64').toString(),
    });
    await edgeProcess.logLine((line) => line.msg === 'edgeward edge ready');
    // What the readiness probe asks, on the port the chart gives it.
    expect((await fetch(`http://127.0.0.1:${edgeMetricsPort}/readyz`)).status).toBe(200);
    // Its tunnel endpoint serves the Secret's certificate, for the name the operator checks.
    const authorized = await new Promise<boolean>((resolve, reject) => {
      const socket = tlsConnect(
        {
          host: '127.0.0.1',
          port: tunnelPort,
          servername: tunnelName,
          ca: certificate.certificatePem,
          ALPNProtocols: ['edgeward-tunnel/1'],
        },
        () => {
          resolve(socket.authorized);
          socket.destroy();
        },
      );
      socket.once('error', reject);
    });
    expect(authorized).toBe(true);

    operator = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        CLI,
        ...args,
        '--kubeconfig',
        saKubeconfig,
        '--leader-election-namespace',
        operatorNs,
      ],
      {
        env: { ...process.env, KUBECONFIG: saKubeconfig, POD_NAMESPACE: operatorNs, LOG_LEVEL: logLevel },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const keep = (chunk: Buffer) => {
      operatorOutput += chunk.toString('utf8');
    };
    operator.stdout?.on('data', keep);
    operator.stderr?.on('data', keep);

    const item = (kind: string, name: string, spec: Record<string, unknown>) => ({
      apiVersion: GROUP_VERSION,
      kind,
      metadata: { name, namespace: workNs },
      spec,
    });
    await kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
          item('BotUser', 'chart-bot', {}),
          item('IPPolicy', 'chart-policy', { rules: [{ cidr: '10.0.0.0/8', action: 'allow' }] }),
          item('TunnelCredential', 'chart-agent', {
            description: `chart-${suffix}`,
            acl: ['bind:*.example.com'],
            ownerRef: { name: 'chart-bot' },
          }),
          item('TLSEdge', 'chart-edge', {
            hostports: [`chart-${suffix}.example.com:443`],
            tlsTermination: { terminateAt: 'upstream' },
            ipRestriction: { ipPolicyRefs: [{ name: 'chart-policy' }] },
          }),
          // Its agent runs in the operator and dials the chart's edge with the chart's CA and name.
          item('TunnelCredential', 'chart-tunnel', { acl: ['bind:app=chart'] }),
          item('Tunnel', 'chart-tunnel', {
            labels: { app: 'chart' },
            forward: { url: 'tcp://127.0.0.1:9' },
            credentialRef: { name: 'chart-tunnel' },
          }),
        ],
      }),
    );
    const bot = await waitReady('botusers', 'chart-bot');
    const policy = await waitReady('ippolicies', 'chart-policy');
    const credential = await waitReady('tunnelcredentials', 'chart-agent');
    const edge = await waitReady('tlsedges', 'chart-edge');
    expect(bot.status?.id).toMatch(idPattern('bot'));
    expect(policy.status?.id).toMatch(idPattern('ipp'));
    expect(credential.status?.id).toMatch(idPattern('cr'));
    expect(edge.status?.id).toMatch(idPattern('edgtls'));
    expect(bot.metadata.finalizers).toContain('edgeward.dev/finalizer');
    const tunnel = await waitReady('tunnels', 'chart-tunnel');
    expect(tunnel.status?.conditions?.find((c) => c.type === 'Ready')?.reason).toBe('Online');
    const sessions = await t.api<{ tunnel_sessions: { id: string }[] }>('GET', '/tunnel_sessions');
    expect(sessions.body.tunnel_sessions.map((session) => session.id)).toEqual([tunnel.status?.id]);

    const secret = await getJson<{
      data?: Record<string, string>;
      metadata: { ownerReferences?: unknown[] };
    }>(['get', '-n', workNs, 'secret', 'chart-agent-token']);
    expect(Buffer.from(secret?.data?.token ?? '', 'base64').toString()).toMatch(/^ewt_[A-Za-z0-9_-]{43}$/);
    expect(secret?.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'TunnelCredential', name: 'chart-agent', controller: true }),
    ]);
    const remote = await t.api('GET', `/edges/tls/${edge.status?.id}`);
    expect(remote.body).toMatchObject({ ip_restriction: { ip_policies: [{ id: policy.status?.id }] } });

    const lease = await getJson<{ spec: { holderIdentity?: string; renewTime?: string } }>([
      'get',
      '-n',
      operatorNs,
      'leases.coordination.k8s.io',
      'edgeward-operator',
    ]);
    expect(lease?.spec.holderIdentity).toBeTruthy();
    // The replica report of the Tunnel's session, written under the chart's Role.
    const reports = async () =>
      (
        await kubectl([
          'get',
          '-n',
          operatorNs,
          'leases.coordination.k8s.io',
          '-l',
          'edgeward.dev/replica-report-of=edgeward-operator',
          '-o',
          'jsonpath={.items[*].metadata.annotations.edgeward\\.dev/replica-report}',
        ])
      ).stdout;
    const reported = await waitFor(async () => (await reports()) || undefined, {
      what: 'the replica report',
      timeoutMs: 10_000,
    });
    expect(JSON.parse(reported)).toEqual({ [`${workNs}/chart-tunnel`]: [tunnel.status?.id] });
    const ready = await fetch(`http://127.0.0.1:${probePort}/readyz`);
    expect(ready.status).toBe(200);
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics.length).toBeGreaterThan(0);

    // An Event made it (the events rule): at least the one about a created resource or a waiting reference.
    const events = await getJson<{ items: { involvedObject: { kind: string } }[] }>([
      'get',
      '-n',
      workNs,
      'events',
    ]);
    expect(
      events?.items.some(
        (event) => event.involvedObject.kind === 'TLSEdge' || event.involvedObject.kind === 'BotUser',
      ),
    ).toBe(true);

    expect(operatorOutput).not.toMatch(/forbidden/i);
    expect(operator?.exitCode).toBeNull();

    // Exactly what it needs: no Secret deletes, nothing outside its namespace, no spec writes.
    const can = (verb: string, resource: string, where: string[]) =>
      canI(serviceAccount, operatorNs, verb, resource, where);
    expect(await can('create', 'secrets', ['-n', workNs])).toBe(true);
    expect(await can('delete', 'secrets', ['-n', workNs])).toBe(false);
    expect(await can('list', 'secrets', ['-n', 'kube-system'])).toBe(false);
    expect(await can('list', 'tlsedges.edgeward.dev', ['--all-namespaces'])).toBe(false);
    expect(await can('update', 'tlsedges.edgeward.dev', ['-n', workNs])).toBe(false);
    expect(await can('update', 'leases/edgeward-operator', ['-n', operatorNs])).toBe(true);
    // The replicas' reports: Leases of the operator's namespace, nowhere else.
    expect(await can('delete', 'leases', ['-n', operatorNs])).toBe(true);
    expect(await can('watch', 'leases', ['-n', operatorNs])).toBe(true);
    expect(await can('update', 'leases', ['-n', workNs])).toBe(false);
    expect(await can('list', 'leases', ['--all-namespaces'])).toBe(false);
    expect(await can('create', 'pods', ['-n', workNs])).toBe(false);

    // A graceful stop releases the Lease (an update of the named Lease, allowed).
    await stopOperator();
    const released = await getJson<{ spec: { holderIdentity?: string } }>([
      'get',
      '-n',
      operatorNs,
      'leases.coordination.k8s.io',
      'edgeward-operator',
    ]);
    expect(released?.spec.holderIdentity ?? '').toBe('');
    // And deletes its report, its agents stopped.
    expect(await reports()).toBe('');
    expect(operatorOutput).not.toMatch(/forbidden/i);
    await edgeProcess.kill('SIGTERM');
    edgeProcess = undefined;
  });
});
