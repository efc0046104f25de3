import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmdirSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ip } from '../../lib/ip-command.js';
import { namesDir, processesOf, stopOwned } from '../processes.js';
import { killPodProcesses, podCgroups, removePodCgroups } from './cgroups.js';
import {
  HOST_PATHS,
  type HostRecord,
  mountPoints,
  RECORD_DIR,
  readSysctl,
  removeRecord,
  writeSysctl,
} from './host-record.js';
import { hasKubeChains, removeKubeChains } from './iptables.js';
import { BRIDGE, linkNames } from './network.js';

/** The programs a dev cluster runs; nothing else is ever stopped by name. */
const CLUSTER_PROGRAMS = new Set([
  'etcd',
  'kube-apiserver',
  'kubelet',
  'kube-proxy',
  'kube-scheduler',
  'kube-controller-manager',
  'containerd',
  'containerd-shim-runc-v2',
  'coredns',
  'runc',
]);
/** What makes a host a Kubernetes node: one of these running is a node, ours or another's. */
const NODE_PROGRAMS = new Set(['kubelet', 'kube-proxy']);
/** Stopped gently first, in this order: the kubelet first, so it restarts nothing. */
const STOP_ORDER = [
  'kubelet',
  'kube-proxy',
  'coredns',
  'kube-scheduler',
  'kube-controller-manager',
  'containerd',
];

/** A node's processes (kubelet, kube-proxy) that do not belong to the cluster folder `dir`. */
export function foreignNodeProcesses(dir?: string): string[] {
  return processesOf(NODE_PROGRAMS)
    .filter((found) => dir === undefined || !namesDir(found.args, dir))
    .map((found) => `${found.program} (pid ${found.pid})`);
}

/** Signs of a Kubernetes node on this host that no record of ours explains. */
export function foreignNodeSigns(): string[] {
  const signs = foreignNodeProcesses();
  if (hasKubeChains()) signs.push('iptables has KUBE-* chains');
  for (const cgroup of podCgroups()) signs.push(`the cgroup ${cgroup} exists`);
  if (linkNames().includes(BRIDGE)) signs.push(`the bridge ${BRIDGE} exists`);
  return signs;
}

/** Stops the cluster's processes: the recorded ones gently, then any left that name its folder. */
async function stopProcesses(record: HostRecord): Promise<string[]> {
  for (const part of STOP_ORDER) {
    const pid = record.pids[part];
    if (pid) await stopOwned(pid, record.clusterDir, part === 'containerd' ? 5_000 : 10_000);
  }
  const problems = await killPodProcesses();
  for (let round = 0; round < 50; round++) {
    const left = processesOf(CLUSTER_PROGRAMS).filter((found) => namesDir(found.args, record.clusterDir));
    if (left.length === 0) return problems;
    for (const { pid } of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
      }
    }
    await sleep(100);
  }
  return [...problems, 'processes of the cluster would not die'];
}

/** Unmounts, deepest first, what the node mounted: all of it lies in its folder. */
function unmount(record: HostRecord): string[] {
  const problems: string[] = [];
  const targets = mountPoints()
    .filter((path) => path.startsWith(`${record.clusterDir}/`))
    .sort((a, b) => b.length - a.length);
  for (const target of targets) {
    const result = spawnSync('umount', ['-l', target], { encoding: 'utf8' });
    if (result.status !== 0) problems.push(`umount ${target}: ${result.stderr.trim()}`);
  }
  return problems;
}

function removeBridge(): string[] {
  if (!linkNames().includes(BRIDGE)) return [];
  try {
    // Pods' veth ends go with their namespaces; a host end left on the bridge goes here.
    const enslaved = JSON.parse(ip('-j', 'link', 'show', 'master', BRIDGE)) as Array<{ ifname: string }>;
    for (const link of enslaved) ip('link', 'delete', link.ifname);
    ip('link', 'delete', BRIDGE);
    return [];
  } catch (error) {
    return [(error as Error).message];
  }
}

/** Restores each sysctl the node changed, unless something else has changed it since. */
function restoreSysctls(record: HostRecord): string[] {
  const problems: string[] = [];
  for (const [name, before] of Object.entries(record.sysctls)) {
    const now = readSysctl(name);
    const nodeValue = record.nodeSysctls?.[name];
    if (now === undefined || now === before) continue;
    if (nodeValue !== undefined && now !== nodeValue) continue;
    try {
      writeSysctl(name, before);
    } catch (error) {
      problems.push(`${name}=${before} (now ${now}): ${(error as Error).message}`);
    }
  }
  return problems;
}

/** Whether nothing listens on a unix socket any more (its server died without removing it). */
async function staleSocket(path: string): Promise<boolean> {
  return await new Promise((done) => {
    const socket = createConnection(path);
    socket.once('connect', () => {
      socket.destroy();
      done(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => done(error.code === 'ECONNREFUSED'));
  });
}

/**
 * Empties a shared folder of what the node left: sockets nothing listens on any more (the shims'
 * under /run/containerd/s), then empty folders, deepest first. Anything else stays.
 */
async function removeLeftEntries(dir: string): Promise<void> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await removeLeftEntries(path);
    else if (entry.isSocket() && (await staleSocket(path))) rmSync(path);
  }
  if (readdirSync(dir).length === 0) rmdirSync(dir);
}

async function removePaths(record: HostRecord): Promise<string[]> {
  const problems: string[] = [];
  for (const { path, remove } of [...HOST_PATHS].reverse()) {
    if (path === RECORD_DIR || !record.createdPaths.includes(path) || !existsSync(path)) continue;
    try {
      if (remove === 'tree') rmSync(path, { recursive: true, force: true });
      else await removeLeftEntries(path);
    } catch (error) {
      problems.push(`${path}: ${(error as Error).message}`);
    }
  }
  return problems;
}

/**
 * Puts the host back as the record says: stops the node's processes and its pods, unmounts,
 * removes the pods' cgroups, the KUBE-* iptables chains, the bridge and the paths the node created,
 * and restores the kernel settings. Every step checks what is there, so it is safe to run twice
 * and after a crash. The cluster's control plane stops too (every cluster program naming the
 * record's folder). Refuses, keeping the record, while a kubelet or kube-proxy of another cluster
 * runs (its chains and cgroups would go too); throws, keeping the record for the next attempt,
 * when a step fails.
 */
export async function removeNodeFromHost(record: HostRecord): Promise<void> {
  const foreign = foreignNodeProcesses(record.clusterDir);
  if (foreign.length > 0) {
    throw new Error(
      `another Kubernetes node runs on this host (${foreign.join(', ')}): the node of ${record.clusterDir} ` +
        'cannot be removed without harming it; stop that node first',
    );
  }
  const problems = [...(await stopProcesses(record)), ...unmount(record), ...(await removePodCgroups())];
  if (record.kubeProxy && existsSync(record.kubeProxy)) {
    // kube-proxy's own cleanup of its iptables, ipvs and nftables state.
    spawnSync(record.kubeProxy, ['--cleanup', '--v=0'], { stdio: 'ignore' });
  }
  problems.push(
    ...removeKubeChains(),
    ...removeBridge(),
    ...restoreSysctls(record),
    ...(await removePaths(record)),
  );
  if (problems.length > 0) {
    throw new Error(
      `could not put the host back entirely (the record ${RECORD_DIR}/host.json stays, for the next attempt):\n  ${problems.join('\n  ')}`,
    );
  }
  removeRecord();
  if (record.createdPaths.includes(RECORD_DIR)) rmSync(RECORD_DIR, { recursive: true, force: true });
}
