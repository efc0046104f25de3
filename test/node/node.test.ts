import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { issueCertificate } from '../../src/crypto/x509.js';
import { readRecord } from '../../src/dev-cluster/node/host-record.js';
import {
  clearLeftovers,
  clusterDown,
  importImages,
  type NodeCluster,
  nodeClusterUp,
  nodeCtr,
  nodeUnavailableReason,
} from '../../src/dev-cluster/node/node.js';
import { ownedBy, processRunning } from '../../src/dev-cluster/processes.js';
import { ensureTools } from '../../src/dev-cluster/tools.js';
import { buildImage, IMAGE_NAME, IMAGE_TAG } from '../../src/image/build-image.js';
import { buildEchoImage, ECHO_IMAGE, ECHO_PATH, ECHO_PORT } from '../support/echo-image.js';
import { waitFor } from '../support/eventually.js';
import { type HostSnapshot, hostSnapshot } from '../support/host-snapshot.js';
import { tool } from '../support/kubectl.js';
import { SHARED_IMAGE_DIR } from '../support/node-global-setup.js';
import { describeUnless } from '../support/skip-reason.js';

/**
 * The chart and the image as users run them, on a real node: `dev-cluster up --node` (kubelet,
 * containerd and runc, kube-proxy, CoreDNS, the scheduler and the controller-manager), the image
 * `npm run image` builds imported into its containerd, `helm install` with hooks and probes. Then
 * traffic from the host through the edge pod to workload pods, the operator's container killed and
 * restarted by the kubelet, and the host put back as it was, also after a crash.
 */

const run = promisify(execFile);
const CHART = fileURLToPath(new URL('../../charts/edgeward', import.meta.url));
const RELEASE = 'ew';
const SYSTEM_NS = 'edgeward-system';
const WORK_NS = 'workload';
const PREFIX = `${RELEASE}-edgeward`;

const why = nodeUnavailableReason();
if (why && process.env.CI) throw new Error(`the node suite cannot run on CI: ${why}`);

const log = (line: string) => console.log(`[node] ${line}`);
let scratch = '';
let cluster: NodeCluster | undefined;
let kubectlBinary = '';
let helmBinary = '';
let hostBefore: HostSnapshot;

const kubectl = async (args: string[], input?: string) =>
  (await tool(kubectlBinary, (cluster as NodeCluster).kubeconfigPath, args, input)).stdout;
const helm = async (args: string[]) =>
  (await tool(helmBinary, (cluster as NodeCluster).kubeconfigPath, args)).stdout;
const getJson = async <T>(args: string[]): Promise<T> =>
  JSON.parse(await kubectl([...args, '-o', 'json'])) as T;
const apply = (objects: object[]) =>
  kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));

interface Pod {
  metadata: { name: string; uid: string };
  status: {
    podIP?: string;
    phase?: string;
    conditions?: Array<{ type: string; status: string }>;
    containerStatuses?: Array<{ name: string; ready: boolean; restartCount: number; containerID?: string }>;
  };
}

const podsOf = async (namespace: string, selector: string) =>
  (await getJson<{ items: Pod[] }>(['get', 'pods', '-n', namespace, '-l', selector])).items;
const ready = (pod: Pod) =>
  pod.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const component = (name: string) =>
  `app.kubernetes.io/instance=${RELEASE},app.kubernetes.io/component=${name}`;

async function onePodReady(namespace: string, selector: string, timeoutMs = 120_000): Promise<Pod> {
  return await waitFor(
    async () => {
      const pods = await podsOf(namespace, selector);
      return pods.length === 1 && ready(pods[0] as Pod) ? (pods[0] as Pod) : undefined;
    },
    { what: `one Ready pod of ${selector}`, timeoutMs, intervalMs: 500 },
  );
}

/** Every pod of a selector, once there are exactly `count` and all are Ready. */
async function podsReady(
  namespace: string,
  selector: string,
  count: number,
  timeoutMs = 120_000,
): Promise<Pod[]> {
  return await waitFor(
    async () => {
      const pods = await podsOf(namespace, selector);
      return pods.length === count && pods.every(ready) ? pods : undefined;
    },
    { what: `${count} Ready pods of ${selector}`, timeoutMs, intervalMs: 500 },
  );
}

/**
 * Sends one request after another through `send` while `disrupt` runs, and then for `settleMs`
 * more: how many were sent, and how many failed (`send` gave no answer).
 */
async function underLoad(
  send: () => Promise<string | undefined>,
  disrupt: () => Promise<void>,
  settleMs = 3_000,
): Promise<{ sent: number; failed: number }> {
  let sent = 0;
  let failed = 0;
  let stop = false;
  const loop = (async () => {
    while (!stop) {
      sent++;
      if ((await send()) === undefined) failed++;
    }
  })();
  try {
    await disrupt();
    await new Promise((resolve) => setTimeout(resolve, settleMs));
  } finally {
    stop = true;
    await loop;
  }
  return { sent, failed };
}

/** `helm upgrade` of the release with its values and one more `--set`, waiting for the rollout. */
const upgradeSetting = (setting: string) =>
  helm([
    'upgrade',
    RELEASE,
    CHART,
    '--namespace',
    SYSTEM_NS,
    '--reuse-values',
    '--set',
    setting,
    '--wait',
    '--timeout',
    '5m',
  ]);

/** What the operator, the edge and the objects say, for a wait that timed out. */
async function diagnose(): Promise<string> {
  const say = async (args: string[]) => {
    try {
      return await kubectl(args);
    } catch (error) {
      return String(error);
    }
  };
  return [
    await say(['get', 'tunnels,tcpedges,reservedaddresses,pods,endpointslices', '-n', WORK_NS, '-o', 'wide']),
    await say([
      'get',
      'tunnels',
      '-n',
      WORK_NS,
      '-o',
      'jsonpath={range .items[*]}{.metadata.name}: {.status}{"\\n"}{end}',
    ]),
    await say(['get', 'pods', '-n', SYSTEM_NS, '-o', 'wide']),
    await say(['logs', '-n', SYSTEM_NS, '-l', component('operator'), '--tail', '30']),
    await say(['logs', '-n', SYSTEM_NS, '-l', component('edge'), '--tail', '30']),
  ].join('\n');
}

/** A wait that, when it times out, says what the cluster looked like. */
async function diagnosed<T>(wait: Promise<T>): Promise<T> {
  try {
    return await wait;
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${await diagnose()}`, { cause: error });
  }
}

/** The server's API from the host, through its Service's ClusterIP (kube-proxy), with the admin key. */
async function api<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const service = await getJson<{ spec: { clusterIP: string } }>([
    'get',
    'service',
    '-n',
    SYSTEM_NS,
    `${PREFIX}-server`,
  ]);
  const secret = await getJson<{ data: Record<string, string> }>([
    'get',
    'secret',
    '-n',
    SYSTEM_NS,
    `${PREFIX}-server-admin-key`,
  ]);
  const key = Buffer.from(secret.data['admin-api-key'] ?? '', 'base64').toString();
  const response = await fetch(`http://${service.spec.clusterIP}:4040${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'svc-version': '2' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: response.status, body: (await response.json()) as T };
}

/** The host pids of a container: those whose cgroup path ends in the container's id. */
function containerProcesses(containerId: string): number[] {
  const id = /^containerd:\/\/([0-9a-f]{64})$/.exec(containerId)?.[1];
  if (!id) throw new Error(`not a containerd container id: '${containerId}'`);
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cgroup`, 'utf8')
          .split('\n')
          .some((line) => line.includes('/kubepods/') && line.endsWith(`/${id}`));
      } catch {
        return false;
      }
    })
    .map(Number);
}

describeUnless(why, 'a node that runs pods', () => {
  beforeAll(async () => {
    hostBefore = hostSnapshot();
    scratch = mkdtempSync(join(tmpdir(), 'edgeward-node-'));
    const tools = await ensureTools(['kubectl', 'helm'], log);
    kubectlBinary = tools.kubectl;
    helmBinary = tools.helm;
    // The image suite's build of this run when there is one (it ran in the first group), else our own.
    const shared = process.env[SHARED_IMAGE_DIR];
    const sharedArchive = shared && join(shared, `edgeward-${IMAGE_TAG}.oci.tar`);
    const image =
      sharedArchive && existsSync(sharedArchive)
        ? { archive: sharedArchive }
        : buildImage(join(scratch, 'image'), log);
    const echo = buildEchoImage(scratch);
    // The test process owns the node: if it dies, the next start removes the node.
    cluster = await nodeClusterUp(join(scratch, 'cluster'), log, { ownedByCaller: true });
    const imported = importImages(cluster.dir, [image.archive, echo], await nodeCtr());
    expect(imported.sort()).toEqual([`${IMAGE_NAME}:${IMAGE_TAG}`, ECHO_IMAGE].sort());
  }, 1_200_000);

  afterAll(async () => {
    if (cluster) await clusterDown(cluster.dir, log);
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }, 120_000);

  it('installs the chart as users do: hooks, probes, uid 1000, read-only root, the default seccomp profile, logs and exec', async () => {
    const node = cluster as NodeCluster;
    // The server's volume: a static PersistentVolume on the node (no provisioner), owned by uid 1000.
    const volume = join(node.node.paths.volumes, 'server-data');
    mkdirSync(volume, { recursive: true });
    chownSync(volume, 1000, 1000);
    // The edges' tunnel certificate, for the names the operator dials (its --edge-addr).
    const ca = await issueCertificate({ commonName: 'node test CA', validDays: 2, isCa: true });
    const edgeName = `${PREFIX}-edge.${SYSTEM_NS}.svc`;
    const tunnel = await issueCertificate({
      commonName: edgeName,
      dnsNames: [edgeName],
      validDays: 2,
      usages: ['server'],
      issuer: ca,
    });
    const b64 = (text: string) => Buffer.from(text).toString('base64');
    await kubectl(['create', 'namespace', SYSTEM_NS]);
    await apply([
      {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: 'server-data' },
        spec: {
          capacity: { storage: '1Gi' },
          accessModes: ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Retain',
          hostPath: { path: volume, type: 'Directory' },
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'kubernetes.io/tls',
        metadata: { name: 'edge-tunnel', namespace: SYSTEM_NS },
        data: {
          'tls.crt': b64(tunnel.certificatePem),
          'tls.key': b64(tunnel.privateKeyPem),
          'ca.crt': b64(ca.certificatePem),
        },
      },
    ]);
    const started = Date.now();
    await helm([
      'install',
      RELEASE,
      CHART,
      '--namespace',
      SYSTEM_NS,
      '--set',
      'edge.tunnelCertificate.existingSecret=edge-tunnel',
      '--set',
      `edge.tunnelNames={${edgeName}}`,
      // No load balancer controller runs here: helm --wait would wait for a LoadBalancer's address.
      '--set',
      'edge.service.type=ClusterIP',
      // One operator pod (the chart's default is two): the restart below follows its container.
      '--set',
      'operator.replicas=1',
      '--wait',
      '--timeout',
      '5m',
    ]);
    log(`helm install --wait: ${Math.round((Date.now() - started) / 1000)} s`);

    // Two edges (the chart's default), one server, one operator.
    const edges = await podsReady(SYSTEM_NS, component('edge'), 2);
    for (const name of ['server', 'edge', 'operator']) {
      const pod = name === 'edge' ? (edges[0] as Pod) : await onePodReady(SYSTEM_NS, component(name));
      const status = await kubectl([
        'exec',
        '-n',
        SYSTEM_NS,
        pod.metadata.name,
        '--',
        'cat',
        '/proc/1/status',
      ]);
      const field = (key: string) => status.match(new RegExp(`^${key}:\\s+(.*)$`, 'm'))?.[1];
      expect(field('Uid')?.split(/\s+/), `${name}: uid`).toEqual(['1000', '1000', '1000', '1000']);
      // Seccomp 2: a filter is on (the runtime's default profile); no capabilities; no new privileges.
      expect(field('Seccomp'), `${name}: seccomp`).toBe('2');
      expect(field('CapEff'), `${name}: capabilities`).toBe('0000000000000000');
      expect(field('NoNewPrivs'), `${name}: no_new_privs`).toBe('1');
      await expect(
        kubectl(['exec', '-n', SYSTEM_NS, pod.metadata.name, '--', 'touch', '/app/written']),
      ).rejects.toThrow(/Read-only file system/);
    }
    // The key hook ran as a Job's pod: the keys exist, made by it (helm deletes the Job on success).
    const adminKey = await getJson<{ data: Record<string, string> }>([
      'get',
      'secret',
      '-n',
      SYSTEM_NS,
      `${PREFIX}-server-admin-key`,
    ]);
    expect(Buffer.from(adminKey.data['admin-api-key'] ?? '', 'base64').toString()).toMatch(/^ewk_/);
    const server = await onePodReady(SYSTEM_NS, component('server'));
    // kubectl logs reaches the kubelet: the server's JSON log lines.
    expect(await kubectl(['logs', '-n', SYSTEM_NS, server.metadata.name])).toMatch(/^\{"level":/m);
  });

  it('keeps the server data on its volume across helm upgrade and a pod deletion', async () => {
    const created = await api<{ id: string }>('POST', '/ip_policies', { description: 'on the volume' });
    expect(created.status).toBe(201);
    const before = (await onePodReady(SYSTEM_NS, component('server'))).metadata.uid;
    await upgradeSetting('server.logLevel=debug');
    const upgraded = await onePodReady(SYSTEM_NS, component('server'));
    expect(upgraded.metadata.uid).not.toBe(before);
    expect((await api<{ id: string }>('GET', `/ip_policies/${created.body.id}`)).body.id).toBe(
      created.body.id,
    );

    await kubectl(['delete', 'pod', '-n', SYSTEM_NS, upgraded.metadata.name, '--wait=true']);
    const replaced = await onePodReady(SYSTEM_NS, component('server'));
    expect(replaced.metadata.uid).not.toBe(upgraded.metadata.uid);
    const found = await api<{ id: string; description: string }>('GET', `/ip_policies/${created.body.id}`);
    expect(found).toMatchObject({ status: 200, body: { id: created.body.id, description: 'on the volume' } });
  });

  let edgePort = 0;
  // A ClusterIP Service over the edge pods for the TCP edge's port (the chart's public Service
  // carries the tunnel, tls and ssh ports only): kube-proxy sends each request to a Ready edge.
  let edgeServiceIp = '';
  const curlEcho = async () => {
    try {
      const { stdout } = await run('curl', [
        '-sS',
        '--max-time',
        '5',
        `http://${edgeServiceIp}:${edgePort}${ECHO_PATH}?from=host`,
      ]);
      return stdout;
    } catch {
      return '';
    }
  };

  /** One request through the edge: its answer, or undefined when it failed. */
  const answered = async () => {
    const answer = await curlEcho();
    return answer.startsWith('pod=') ? answer : undefined;
  };

  it('carries a request from the host through the edge pod to a workload pod, and follows its replacement', async () => {
    await kubectl(['create', 'namespace', WORK_NS]);
    const labels = { app: 'echo' };
    await apply([
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'echo', namespace: WORK_NS },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              containers: [
                {
                  name: 'echo',
                  image: ECHO_IMAGE,
                  imagePullPolicy: 'Never',
                  ports: [{ name: 'http', containerPort: ECHO_PORT }],
                  readinessProbe: { httpGet: { path: '/', port: 'http' }, periodSeconds: 1 },
                  securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true },
                },
              ],
            },
          },
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'echo', namespace: WORK_NS },
        spec: { selector: labels, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
      },
    ]);
    const crd = (kind: string, name: string, spec: object) => ({
      apiVersion: 'edgeward.dev/v1alpha1',
      kind,
      metadata: { name, namespace: WORK_NS },
      spec,
    });
    await apply([
      crd('TunnelCredential', 'echo-agent', { acl: ['bind:app=echo'] }),
      crd('ReservedAddress', 'echo-addr', { region: 'us' }),
    ]);
    const addr = await waitFor(
      async () =>
        (
          await getJson<{ status?: { addr?: string } }>([
            'get',
            'reservedaddresses',
            '-n',
            WORK_NS,
            'echo-addr',
          ])
        ).status?.addr,
      { what: 'the ReservedAddress to get its address', timeoutMs: 60_000, intervalMs: 500 },
    );
    edgePort = Number(addr.split(':').pop());
    await apply([
      crd('TCPEdge', 'echo-edge', { hostports: [addr], backend: { labels } }),
      crd('Tunnel', 'echo', {
        labels,
        forward: { service: { name: 'echo', portName: 'http' }, protocol: 'http' },
        credentialRef: { name: 'echo-agent' },
      }),
    ]);
    await apply([
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'edge-tcp', namespace: SYSTEM_NS },
        spec: {
          selector: {
            'app.kubernetes.io/instance': RELEASE,
            'app.kubernetes.io/component': 'edge',
          },
          ports: [{ name: 'echo', port: edgePort, targetPort: edgePort }],
        },
      },
    ]);
    edgeServiceIp = (
      await getJson<{ spec: { clusterIP: string } }>(['get', 'service', '-n', SYSTEM_NS, 'edge-tcp'])
    ).spec.clusterIP;
    const first = await onePodReady(WORK_NS, 'app=echo');
    const answer = await diagnosed(
      waitFor(answered, {
        what: 'curl through the edge pod to reach the echo pod',
        timeoutMs: 90_000,
        intervalMs: 500,
      }),
    );
    expect(answer).toBe(`pod=${first.metadata.name} method=GET uri=${ECHO_PATH}?from=host\n`);

    // Kill the workload pod's container: the Deployment's replica takes the traffic.
    await kubectl(['delete', 'pod', '-n', WORK_NS, first.metadata.name, '--wait=false']);
    const moved = await diagnosed(
      waitFor(
        async () => {
          const answer = await curlEcho();
          return answer.startsWith('pod=') && !answer.includes(first.metadata.name) ? answer : undefined;
        },
        { what: 'traffic to reach the replacement pod', timeoutMs: 90_000, intervalMs: 500 },
      ),
    );
    const replacement = await onePodReady(WORK_NS, 'app=echo');
    expect(moved).toBe(`pod=${replacement.metadata.name} method=GET uri=${ECHO_PATH}?from=host\n`);
  });

  it('restarts a killed operator container; nothing is duplicated and no token is lost', async () => {
    const operator = await onePodReady(SYSTEM_NS, component('operator'));
    const container = operator.status.containerStatuses?.[0];
    const names = Array.from({ length: 8 }, (_, index) => `crash-${index}`);
    await apply(
      names.map((name) => ({
        apiVersion: 'edgeward.dev/v1alpha1',
        kind: 'TunnelCredential',
        metadata: { name, namespace: WORK_NS },
        spec: { description: `node crash ${name}`, acl: [`bind:${name}.node.example.com`] },
      })),
    );
    // Killed while it works through them: as soon as the first has its server id.
    await waitFor(
      async () =>
        (
          await getJson<{ items: Array<{ status?: { id?: string } }> }>([
            'get',
            'tunnelcredentials',
            '-n',
            WORK_NS,
          ])
        ).items.some((item) => item.status?.id),
      { what: 'the operator to start on the credentials', timeoutMs: 60_000, intervalMs: 100 },
    );
    const pids = containerProcesses(container?.containerID ?? '');
    expect(pids.length).toBeGreaterThan(0);
    await run('kill', ['-9', ...pids.map(String)]);

    const restarted = await waitFor(
      async () => {
        const pods = await podsOf(SYSTEM_NS, component('operator'));
        const pod = pods[0];
        return pods.length === 1 &&
          pod &&
          ready(pod) &&
          (pod.status.containerStatuses?.[0]?.restartCount ?? 0) > (container?.restartCount ?? 0)
          ? pod
          : undefined;
      },
      { what: 'the kubelet to restart the operator container', timeoutMs: 120_000, intervalMs: 500 },
    );
    expect(restarted.metadata.uid).toBe(operator.metadata.uid);

    const crs = await waitFor(
      async () => {
        const items = (
          await getJson<{
            items: Array<{
              metadata: { name: string };
              status?: {
                id?: string;
                tokenSecretName?: string;
                conditions?: Array<{ type: string; status: string }>;
              };
            }>;
          }>(['get', 'tunnelcredentials', '-n', WORK_NS])
        ).items.filter((item) => item.metadata.name.startsWith('crash-'));
        return items.length === names.length &&
          items.every((item) =>
            item.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
          )
          ? items
          : undefined;
      },
      { what: 'every credential to be Ready after the restart', timeoutMs: 120_000, intervalMs: 500 },
    );
    const listed = await api<{ credentials: Array<{ id: string; description: string }> }>(
      'GET',
      '/credentials?limit=100',
    );
    const remote = listed.body.credentials.filter((credential) =>
      credential.description.startsWith('node crash '),
    );
    expect(remote.map((credential) => credential.description).sort()).toEqual(
      names.map((name) => `node crash ${name}`).sort(),
    );
    for (const cr of crs) {
      expect(
        remote.find((credential) => credential.description === `node crash ${cr.metadata.name}`)?.id,
      ).toBe(cr.status?.id);
      const secret = await getJson<{
        data: Record<string, string>;
        metadata: { annotations: Record<string, string> };
      }>(['get', 'secret', '-n', WORK_NS, cr.status?.tokenSecretName ?? `${cr.metadata.name}-token`]);
      expect(secret.metadata.annotations['edgeward.dev/credential-id']).toBe(cr.status?.id);
      expect(Buffer.from(secret.data.token ?? '', 'base64').toString()).not.toBe('');
    }
    // The operator's Tunnel came back too: traffic flows again, to the same workload pod.
    const workload = await onePodReady(WORK_NS, 'app=echo');
    const again = await diagnosed(
      waitFor(answered, { what: 'traffic after the restart', timeoutMs: 60_000, intervalMs: 500 }),
    );
    expect(again).toBe(`pod=${workload.metadata.name} method=GET uri=${ECHO_PATH}?from=host\n`);
  });

  it('fails no request while the edges roll and while the operator leader pod is deleted', async () => {
    // Two operator replicas (the chart's default; one until now for the crash test above).
    await upgradeSetting('operator.replicas=2');
    await podsReady(SYSTEM_NS, component('operator'), 2);
    const edgesBefore = (await podsReady(SYSTEM_NS, component('edge'), 2)).map((pod) => pod.metadata.uid);
    // Both edges carry the Tunnel (agents on each, or the relay): every request answers.
    await diagnosed(
      waitFor(
        async () => {
          for (let i = 0; i < 10; i++) if ((await answered()) === undefined) return undefined;
          return true;
        },
        { what: 'ten answers in a row through the edges', timeoutMs: 90_000, intervalMs: 500 },
      ),
    );

    // A rolling restart of the edges: each drains (readyz fails, endpoints drop it, GOAWAY to agents).
    const rollout = await underLoad(answered, async () => {
      await kubectl(['rollout', 'restart', '-n', SYSTEM_NS, `deployment/${PREFIX}-edge`]);
      await kubectl(['rollout', 'status', '-n', SYSTEM_NS, `deployment/${PREFIX}-edge`, '--timeout=5m']);
    });
    log(`edge rollout restart: ${rollout.sent} requests sent, ${rollout.failed} failed`);
    const edgesAfter = (await podsReady(SYSTEM_NS, component('edge'), 2)).map((pod) => pod.metadata.uid);
    expect(edgesAfter.filter((uid) => edgesBefore.includes(uid))).toEqual([]);
    expect(rollout.sent).toBeGreaterThan(20);
    expect(rollout.failed).toBe(0);

    // The leader: the Lease's holder (identity `<pod name>_<uuid>`). Its replacement takes the
    // Lease; the other replica's agents carry the Tunnel meanwhile.
    const lease = await getJson<{ spec: { holderIdentity?: string } }>([
      'get',
      'lease',
      '-n',
      SYSTEM_NS,
      'edgeward-operator',
    ]);
    const leader = lease.spec.holderIdentity?.split('_')[0] ?? '';
    const operators = await podsOf(SYSTEM_NS, component('operator'));
    expect(operators.map((pod) => pod.metadata.name)).toContain(leader);
    const leaderLoss = await underLoad(answered, async () => {
      await kubectl(['delete', 'pod', '-n', SYSTEM_NS, leader, '--wait=true']);
      await podsReady(SYSTEM_NS, component('operator'), 2);
      await waitFor(
        async () => {
          const holder = (
            await getJson<{ spec: { holderIdentity?: string } }>([
              'get',
              'lease',
              '-n',
              SYSTEM_NS,
              'edgeward-operator',
            ])
          ).spec.holderIdentity;
          return holder && !holder.startsWith(`${leader}_`) ? holder : undefined;
        },
        { what: 'another replica to hold the leader Lease', timeoutMs: 60_000, intervalMs: 500 },
      );
    });
    log(`operator leader deleted: ${leaderLoss.sent} requests sent, ${leaderLoss.failed} failed`);
    expect(leaderLoss.sent).toBeGreaterThan(20);
    expect(leaderLoss.failed).toBe(0);
  }, 600_000);

  it('puts the host back as it was after a crash: the next start removes what the killed node left', async () => {
    const node = cluster as NodeCluster;
    // A crash: every process of the node killed at once, pods left running under their shims.
    const record = readRecord();
    const pids = Object.values(record?.pids ?? {}).filter((pid) => ownedBy(pid, node.dir));
    expect(pids.length).toBe(6);
    await run('kill', ['-9', ...pids.map(String)]);
    await waitFor(() => pids.every((pid) => !processRunning(pid)), {
      what: 'the killed processes to exit',
      timeoutMs: 10_000,
    });
    expect(hostSnapshot(hostBefore)).not.toEqual(hostBefore);
    // The test process still runs, so the node counts as running: the kubelet's death decides.
    await clearLeftovers(log);
    cluster = undefined;
    expect(hostSnapshot(hostBefore)).toEqual(hostBefore);
    expect(readRecord()).toBeUndefined();
    expect(readdirSync(scratch)).not.toContain(node.dir.split('/').pop());
  });
});
