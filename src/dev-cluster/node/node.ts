import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { Agent, request } from 'undici';
import { missingCommands } from '../../lib/command-on-path.js';
import { ociArchiveImageNames } from '../../lib/oci-archive.js';
import { type ControlPlane, controlPlaneDown, controlPlaneUp, mintUser } from '../control-plane.js';
import { freePort } from '../free-port.js';
import { withFileLock } from '../lock.js';
import { ownedBy, processRunning, startDetached, waitFor } from '../processes.js';
import { NODE_TOOLS } from '../tool-versions.js';
import { ensureTools, type Log, type ToolPaths } from '../tools.js';
import { containerdConfig, corefile, kubeletConfig, kubeProxyConfig, type NodePaths } from './configs.js';
import { foreignNodeSigns, removeNodeFromHost } from './host-cleanup.js';
import {
  type HostRecord,
  readRecord,
  readSysctls,
  recordHost,
  saveRecord,
  writeSysctl,
} from './host-record.js';
import { assertRangesFree, BRIDGE, cniConfig, createBridge, HOST_ADDRESS, NODE_NAME } from './network.js';

/** Debian's runc and CNI plugins: what containerd runs pods with and wires their network. */
const RUNC = '/usr/sbin/runc';
const CNI_BIN_DIR = '/usr/lib/cni';
const HOST_COMMANDS = [
  'ip',
  'iptables',
  'iptables-save',
  'ip6tables',
  'ip6tables-save',
  'umount',
  'umoci',
  'gcc',
];
/** One node per host: starts and stops take turns. */
const NODE_LOCK = '/run/edgeward-dev-node.lock';
/** kubelet's ports: fixed, so one node per host. */
const KUBELET_PORTS = [10250, 10248];

export function nodePaths(clusterDir: string): NodePaths {
  const root = join(resolve(clusterDir), 'node');
  return {
    root,
    containerdRoot: join(root, 'containerd', 'root'),
    containerdState: join(root, 'containerd', 'state'),
    containerdSocket: join(root, 'containerd', 'containerd.sock'),
    containerdConfig: join(root, 'containerd', 'config.toml'),
    cniConfDir: join(root, 'cni', 'net.d'),
    cniIpamDir: join(root, 'cni', 'ipam'),
    kubeletRoot: join(root, 'kubelet'),
    kubeletCerts: join(root, 'kubelet-pki'),
    kubeletConfig: join(root, 'kubelet.yaml'),
    kubeletKubeconfig: join(root, 'kubelet.kubeconfig'),
    podLogs: join(root, 'pod-logs'),
    resolvConf: join(root, 'resolv.conf'),
    kubeProxyConfig: join(root, 'kube-proxy.yaml'),
    corefile: join(root, 'Corefile'),
    volumes: join(root, 'volumes'),
  };
}

/** Why this host cannot run a node, or undefined when it can (root and Debian's parts). */
export function nodeUnavailableReason(): string | undefined {
  if (process.getuid?.() !== 0) {
    return 'a node changes the host (cgroups, iptables, mounts, a bridge): it needs root';
  }
  const missing = [
    ...[
      RUNC,
      join(CNI_BIN_DIR, 'bridge'),
      join(CNI_BIN_DIR, 'host-local'),
      join(CNI_BIN_DIR, 'loopback'),
    ].filter((path) => !existsSync(path)),
    ...missingCommands(HOST_COMMANDS),
  ];
  if (missing.length > 0) {
    return `missing ${missing.join(', ')} (Debian: apt-get install runc containernetworking-plugins iptables umoci build-essential)`;
  }
  return undefined;
}

/** Whether a port can be bound on loopback (a listener on any address makes it fail). */
async function portTaken(port: number): Promise<boolean> {
  return await new Promise((done) => {
    const server = createServer();
    server.once('error', () => done(true));
    server.listen(port, '127.0.0.1', () => server.close(() => done(false)));
  });
}

/**
 * Removes what an earlier node left behind (a crash, a killed test run) before a new one starts,
 * and refuses to start beside a node that still runs or one that is not ours.
 */
export async function clearLeftovers(log: Log): Promise<void> {
  const record = readRecord();
  if (record) {
    const kubelet = record.pids.kubelet;
    const nodeRuns = kubelet !== undefined && processRunning(kubelet) && ownedBy(kubelet, record.clusterDir);
    // A test's node lives as long as the test process; a CLI's until `down`.
    const orphaned = record.ownedByStarter && !processRunning(record.starter);
    const starting = !record.ready && processRunning(record.starter) && record.starter !== process.pid;
    if ((nodeRuns && !orphaned) || starting) {
      throw new Error(
        `a node already runs for ${record.clusterDir}: stop it with 'edgeward dev-cluster down --dir ${record.clusterDir}'`,
      );
    }
    log(`removing what the node of ${record.clusterDir} left on this host`);
    await removeNodeFromHost(record);
    await controlPlaneDown(record.clusterDir);
    return;
  }
  const signs = foreignNodeSigns();
  if (signs.length > 0) {
    throw new Error(`this host already runs a Kubernetes node that is not edgeward's: ${signs.join('; ')}`);
  }
  for (const port of KUBELET_PORTS) {
    if (await portTaken(port))
      throw new Error(`port ${port} (the kubelet's) is in use: is another kubelet running?`);
  }
}

export interface NodeCluster extends ControlPlane {
  node: { name: string; address: string; paths: NodePaths };
}

/**
 * A control plane with a node that runs pods: etcd and kube-apiserver (on the node's bridge
 * address), containerd, the kubelet, kube-proxy, the scheduler, the controller-manager and CoreDNS.
 * Needs root; see `nodeUnavailableReason`. Everything it changes on the host is recorded first
 * and undone by `clusterDown`, or by the next `nodeClusterUp` after a crash.
 */
export async function nodeClusterUp(
  dirArg: string,
  log: Log = () => {},
  options: { ownedByCaller?: boolean } = {},
): Promise<NodeCluster> {
  const unavailable = nodeUnavailableReason();
  if (unavailable) throw new Error(`dev-cluster up --node: ${unavailable}`);
  const dir = resolve(dirArg);
  // Built (once) before anything on the host changes.
  const tools = await ensureTools(['etcd', 'kube-apiserver', 'kubectl', ...NODE_TOOLS], log);
  return await withFileLock(NODE_LOCK, log, async () => {
    await clearLeftovers(log);
    assertRangesFree();
    const record = recordHost(dir, options.ownedByCaller ?? false);
    record.kubeProxy = tools['kube-proxy'];
    saveRecord(record);
    return await startOrUndo(dir, tools, record, log);
  });
}

async function startOrUndo(
  dir: string,
  tools: ToolPaths,
  record: HostRecord,
  log: Log,
): Promise<NodeCluster> {
  try {
    const started = Date.now();
    createBridge();
    // Pod to ClusterIP to pod: forwarded on this bridge only (the host's ip_forward is untouched).
    writeSysctl(`net.ipv4.conf.${BRIDGE}.forwarding`, '1');
    const plane = await controlPlaneUp(dir, log, { address: HOST_ADDRESS, forNode: true });
    const paths = nodePaths(dir);
    await startNode(plane, paths, tools, record, log);
    record.ready = true;
    record.nodeSysctls = readSysctls();
    saveRecord(record);
    log(`node ${NODE_NAME} ready in ${Math.round((Date.now() - started) / 1000)} s (pods on ${BRIDGE})`);
    return { ...plane, node: { name: NODE_NAME, address: HOST_ADDRESS, paths } };
  } catch (error) {
    log('start failed; removing what it changed on the host');
    try {
      await removeNodeFromHost(record);
      await controlPlaneDown(dir);
    } catch (cleanup) {
      throw new AggregateError(
        [error, cleanup],
        'the node did not start, and undoing its host changes failed',
      );
    }
    throw error;
  }
}

async function startNode(
  plane: ControlPlane,
  paths: NodePaths,
  tools: ToolPaths,
  record: HostRecord,
  log: Log,
): Promise<void> {
  for (const folder of [
    paths.root,
    paths.cniConfDir,
    paths.cniIpamDir,
    paths.kubeletRoot,
    paths.kubeletCerts,
    paths.podLogs,
    paths.volumes,
    join(paths.containerdRoot, '..'),
  ]) {
    mkdirSync(folder, { recursive: true, mode: 0o700 });
  }
  const logFile = (part: string) => join(plane.dir, `${part}.log`);
  const started = (part: string, pid: number) => {
    record.pids[part] = pid;
    saveRecord(record);
    return pid;
  };
  writeFileSync(join(paths.cniConfDir, '10-edgeward.conflist'), cniConfig(paths.cniIpamDir));
  writeFileSync(paths.containerdConfig, containerdConfig(paths, RUNC, CNI_BIN_DIR));
  // Pods with dnsPolicy Default get the cluster's DNS too: the host's resolvers are out of reach.
  writeFileSync(paths.resolvConf, `nameserver ${HOST_ADDRESS}\n`);

  const containerd = started(
    'containerd',
    startDetached(
      tools.containerd,
      ['--config', paths.containerdConfig, '--log-level', 'warn'],
      logFile('containerd'),
    ),
  );
  await waitFor(
    'containerd',
    30_000,
    logFile('containerd'),
    containerd,
    async () => ctr(paths, tools.ctr, ['version']).status === 0,
  );
  importImages(plane.dir, [tools['pause.oci.tar']], tools.ctr);
  log(
    'containerd ready, the pause image imported; starting the kubelet, kube-proxy, the scheduler, the controller-manager and CoreDNS',
  );

  const caFile = join(plane.dir, 'pki', 'ca.crt');
  const kubeletKubeconfig = await mintUser(plane.dir, `system:node:${NODE_NAME}`, ['system:nodes']);
  writeFileSync(paths.kubeletConfig, kubeletConfig(paths, caFile));
  const kubelet = started(
    'kubelet',
    startDetached(
      tools.kubelet,
      [
        `--config=${paths.kubeletConfig}`,
        `--kubeconfig=${kubeletKubeconfig}`,
        `--root-dir=${paths.kubeletRoot}`,
        `--cert-dir=${paths.kubeletCerts}`,
        `--node-ip=${HOST_ADDRESS}`,
        `--hostname-override=${NODE_NAME}`,
        '--v=1',
      ],
      logFile('kubelet'),
    ),
  );

  const [schedulerPort, managerPort, proxyHealthz, proxyMetrics, dnsReady] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const admin = plane.kubeconfigPath;
  started(
    'kube-scheduler',
    startDetached(
      tools['kube-scheduler'],
      [
        `--kubeconfig=${admin}`,
        `--authentication-kubeconfig=${admin}`,
        `--authorization-kubeconfig=${admin}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${schedulerPort}`,
        '--leader-elect=false',
        `--cert-dir=${join(paths.root, 'scheduler-certs')}`,
      ],
      logFile('kube-scheduler'),
    ),
  );
  const controllerManager = started(
    'kube-controller-manager',
    startDetached(
      tools['kube-controller-manager'],
      [
        `--kubeconfig=${admin}`,
        `--authentication-kubeconfig=${admin}`,
        `--authorization-kubeconfig=${admin}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${managerPort}`,
        `--cert-dir=${join(paths.root, 'controller-manager-certs')}`,
        '--leader-elect=false',
        // Tokens of pods' service accounts, and the kube-root-ca.crt ConfigMap in each namespace.
        `--service-account-private-key-file=${join(plane.dir, 'pki', 'service-account.key')}`,
        `--root-ca-file=${caFile}`,
        `--cluster-name=${NODE_NAME}`,
      ],
      logFile('kube-controller-manager'),
    ),
  );
  const proxyKubeconfig = await mintUser(plane.dir, 'system:kube-proxy');
  writeFileSync(
    paths.kubeProxyConfig,
    kubeProxyConfig(proxyKubeconfig, { healthz: proxyHealthz, metrics: proxyMetrics }),
  );
  const proxy = started(
    'kube-proxy',
    startDetached(tools['kube-proxy'], [`--config=${paths.kubeProxyConfig}`], logFile('kube-proxy')),
  );
  writeFileSync(paths.corefile, corefile(admin, dnsReady));
  const dns = started('coredns', startDetached(tools.coredns, ['-conf', paths.corefile], logFile('coredns')));

  const agent = new Agent({
    connect: {
      ca: readPem(caFile),
      cert: readPem(join(plane.dir, 'pki', 'admin.crt')),
      key: readPem(join(plane.dir, 'pki', 'admin.key')),
    },
  });
  try {
    await waitFor('kubelet (node Ready)', 120_000, logFile('kubelet'), kubelet, async () => {
      const response = await request(`${plane.server}/api/v1/nodes/${NODE_NAME}`, { dispatcher: agent });
      if (response.statusCode !== 200) {
        await response.body.dump();
        return false;
      }
      const node = (await response.body.json()) as {
        status?: { conditions?: Array<{ type: string; status: string }> };
      };
      return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
    });
    // The controller-manager's service-account controller made the default namespace's account.
    await waitFor(
      'kube-controller-manager',
      60_000,
      logFile('kube-controller-manager'),
      controllerManager,
      async () => {
        const response = await request(`${plane.server}/api/v1/namespaces/default/serviceaccounts/default`, {
          dispatcher: agent,
        });
        await response.body.dump();
        return response.statusCode === 200;
      },
    );
  } finally {
    await agent.close();
  }
  await waitFor('kube-proxy', 30_000, logFile('kube-proxy'), proxy, async () => {
    const response = await request(`http://127.0.0.1:${proxyHealthz}/healthz`);
    await response.body.dump();
    return response.statusCode === 200;
  });
  await waitFor('coredns', 30_000, logFile('coredns'), dns, async () => {
    const response = await request(`http://127.0.0.1:${dnsReady}/ready`);
    await response.body.dump();
    return response.statusCode === 200;
  });
}

function readPem(path: string): string {
  return readFileSync(path, 'utf8');
}

function ctr(paths: NodePaths, binary: string, args: string[]) {
  return spawnSync(binary, ['--address', paths.containerdSocket, '--namespace', 'k8s.io', ...args], {
    encoding: 'utf8',
  });
}

/**
 * Imports OCI archives (`npm run image`'s, a test image's) into the node's containerd, where the
 * kubelet finds them by the name their index gives: pods use them with imagePullPolicy
 * IfNotPresent or Never, no registry involved. Returns the names imported.
 */
export function importImages(clusterDir: string, archives: string[], ctrBinary: string): string[] {
  const paths = nodePaths(clusterDir);
  const names: string[] = [];
  for (const archive of archives) {
    const named = ociArchiveImageNames(archive);
    if (named.length === 0) {
      throw new Error(
        `${archive} names no image (its index.json has no io.containerd.image.name annotation)`,
      );
    }
    const imported = ctr(paths, ctrBinary, ['images', 'import', archive]);
    if (imported.status !== 0) {
      throw new Error(`ctr images import ${archive} failed:\n${imported.stderr}${imported.stdout}`);
    }
    names.push(...named);
  }
  const listed = ctr(paths, ctrBinary, ['images', 'list', '--quiet']).stdout.split('\n');
  const missing = names.filter((name) => !listed.includes(name));
  if (missing.length > 0) throw new Error(`containerd does not list ${missing.join(', ')} after the import`);
  return names;
}

/** The node's ctr (built with containerd). */
export async function nodeCtr(): Promise<string> {
  return (await ensureTools(['ctr'])).ctr;
}

/** Stops the cluster of DIR: its node first (putting the host back), then the control plane. */
export async function clusterDown(dirArg: string, log: Log = () => {}): Promise<void> {
  const dir = resolve(dirArg);
  await withFileLock(NODE_LOCK, log, async () => {
    const record = readRecord();
    if (record && record.clusterDir === dir) await removeNodeFromHost(record);
  });
  await controlPlaneDown(dir);
}
