import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, rmdirSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { processAlive } from '../../lib/process-alive.js';
import { ownedBy, stopOwned } from '../processes.js';
import type { Log } from '../tools.js';
import {
  type HostRecord,
  mountPoints,
  RECORD_DIR,
  readSysctl,
  removeRecord,
  SHARED_HOST_PATHS,
  writeSysctl,
} from './host-record.js';
import { BRIDGE, ip, linkNames } from './network.js';

const CGROUP_ROOT = '/sys/fs/cgroup';
/** The cgroup kubelet puts every pod under (cgroupfs driver), in each hierarchy. */
const POD_CGROUP = 'kubepods';
/** Processes stopped gently first, in this order: kubelet first, so it restarts nothing. */
const STOP_ORDER = [
  'kubelet',
  'kube-proxy',
  'coredns',
  'kube-scheduler',
  'kube-controller-manager',
  'containerd',
];

/** The cgroup hierarchies of the host (v1 controllers, and cgroup2 where mounted). */
function hierarchies(): string[] {
  if (!existsSync(CGROUP_ROOT)) return [];
  if (existsSync(join(CGROUP_ROOT, 'cgroup.controllers'))) return [CGROUP_ROOT];
  return readdirSync(CGROUP_ROOT)
    .map((name) => join(CGROUP_ROOT, name))
    .filter((path) => !lstatSync(path).isSymbolicLink());
}

/** The node's pod cgroups that exist now, in every hierarchy. */
export function podCgroups(): string[] {
  return hierarchies()
    .map((hierarchy) => join(hierarchy, POD_CGROUP))
    .filter((path) => existsSync(path));
}

/** Every cgroup folder under `root`, deepest first. */
function cgroupTree(root: string): string[] {
  const children = readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => cgroupTree(join(root, entry.name)));
  return [...children, root];
}

function cgroupProcesses(cgroup: string): number[] {
  try {
    return readFileSync(join(cgroup, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** The programs a dev cluster runs; nothing else is ever killed by name. */
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

/**
 * The cluster's processes: those of CLUSTER_PROGRAMS whose command line names its folder
 * (containerd's shims name its socket), whoever started them.
 */
function clusterProcesses(dir: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const program = basename(readlinkSync(`/proc/${pid}/exe`)).replace(/ \(deleted\)$/, '');
      if (CLUSTER_PROGRAMS.has(program) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir))
        found.push(pid);
    } catch {
      // Exited meanwhile.
    }
  }
  return found;
}

function kill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Gone already.
  }
}

async function killPods(): Promise<void> {
  for (let round = 0; round < 50; round++) {
    const pids = podCgroups().flatMap((root) => cgroupTree(root).flatMap(cgroupProcesses));
    if (pids.length === 0) return;
    for (const pid of pids) kill(pid);
    await sleep(100);
  }
}

async function removeCgroups(log: Log): Promise<void> {
  for (const root of podCgroups()) {
    for (const cgroup of cgroupTree(root)) {
      // A killed process leaves its cgroup a moment after it exits.
      for (let attempt = 0; ; attempt++) {
        try {
          rmdirSync(cgroup);
          break;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') break;
          if (attempt >= 50) {
            log(`could not remove the cgroup ${cgroup}: ${(error as Error).message}`);
            break;
          }
          await sleep(100);
        }
      }
    }
  }
}

/**
 * Unmounts, deepest first, what the node mounted under its folder and the host paths only it
 * uses. Network namespaces of other programs under /run/netns are left alone.
 */
function unmount(record: HostRecord): void {
  const ours = (path: string) =>
    path.startsWith(`${record.clusterDir}/`) ||
    ['/run/containerd/', '/var/lib/kubelet/', '/var/lib/containerd/'].some((prefix) =>
      path.startsWith(prefix),
    );
  const targets = mountPoints()
    .filter(ours)
    .sort((a, b) => b.length - a.length);
  for (const target of targets) spawnSync('umount', ['-l', target], { stdio: 'ignore' });
  if (!record.netnsWasMounted && isEmptyDir('/run/netns') && mountPoints().includes('/run/netns')) {
    spawnSync('umount', ['-l', '/run/netns'], { stdio: 'ignore' });
  }
}

function isEmptyDir(path: string): boolean {
  try {
    return readdirSync(path).length === 0;
  } catch {
    return false;
  }
}

/** Splits an iptables-save rule line into arguments (double-quoted words as one). */
export function splitRule(line: string): string[] {
  const args: string[] = [];
  const pattern = /"((?:[^"\\]|\\.)*)"|(\S+)/g;
  for (const match of line.matchAll(pattern)) {
    args.push(match[1] !== undefined ? match[1].replace(/\\(.)/g, '$1') : (match[2] as string));
  }
  return args;
}

/** Removes kubelet's and kube-proxy's iptables chains (KUBE-*) and the jumps into them. */
function removeKubeChains(log: Log): void {
  for (const binary of ['iptables', 'ip6tables']) {
    for (const table of ['filter', 'nat', 'mangle']) {
      const saved = spawnSync(`${binary}-save`, ['-t', table], { encoding: 'utf8' });
      if (saved.status !== 0) continue;
      const lines = saved.stdout.split('\n');
      const jumps = lines.filter((line) => line.startsWith('-A ') && /(^|\s)-[jg] KUBE-/.test(line));
      const chains = lines
        .filter((line) => line.startsWith(':KUBE-'))
        .map((line) => line.slice(1).split(' ')[0] as string);
      for (const jump of jumps) {
        const args = splitRule(jump);
        args[0] = '-D';
        const removed = spawnSync(binary, ['-w', '-t', table, ...args], { encoding: 'utf8' });
        if (removed.status !== 0) log(`${binary} -t ${table} ${args.join(' ')}: ${removed.stderr.trim()}`);
      }
      for (const chain of chains) spawnSync(binary, ['-w', '-t', table, '-F', chain], { stdio: 'ignore' });
      for (const chain of chains) {
        const removed = spawnSync(binary, ['-w', '-t', table, '-X', chain], { encoding: 'utf8' });
        if (removed.status !== 0) log(`${binary} -t ${table} -X ${chain}: ${removed.stderr.trim()}`);
      }
    }
  }
}

/**
 * Puts the host back as the record says: stops the node's processes and its pods, unmounts,
 * removes cgroups, iptables chains, the bridge and the paths it created, and restores sysctls.
 * Safe to run twice, and after a crash (every step checks what is there). The control plane of
 * the record's folder goes too: everything whose command line names that folder.
 */
export async function removeNodeFromHost(record: HostRecord, log: Log): Promise<void> {
  for (const part of STOP_ORDER) {
    const pid = record.pids[part];
    if (pid) await stopOwned(pid, record.clusterDir, part === 'containerd' ? 5_000 : 10_000);
  }
  await killPods();
  for (let round = 0; round < 50; round++) {
    const left = clusterProcesses(record.clusterDir);
    if (left.length === 0) break;
    for (const pid of left) kill(pid);
    await sleep(100);
  }
  unmount(record);
  await removeCgroups(log);
  if (record.kubeProxy && existsSync(record.kubeProxy)) {
    spawnSync(record.kubeProxy, ['--cleanup', '--v=0'], { stdio: 'ignore' });
  }
  removeKubeChains(log);
  const links = linkNames();
  if (links.includes(BRIDGE)) {
    // Pod ends of veth pairs go with their namespaces; a host end left on the bridge goes here.
    const enslaved = JSON.parse(ip('-j', 'link', 'show', 'master', BRIDGE)) as Array<{ ifname: string }>;
    for (const link of enslaved) spawnSync('ip', ['link', 'delete', link.ifname], { stdio: 'ignore' });
    ip('link', 'delete', BRIDGE);
  }
  for (const [name, value] of Object.entries(record.sysctls)) {
    const now = readSysctl(name);
    if (now !== undefined && now !== value) {
      try {
        writeSysctl(name, value);
      } catch (error) {
        log(`could not restore ${name}=${value} (now ${now}): ${(error as Error).message}`);
      }
    }
  }
  for (const path of [...record.createdPaths].reverse()) {
    if (path === RECORD_DIR) continue;
    if (!SHARED_HOST_PATHS.includes(path)) rmSync(path, { recursive: true, force: true });
    else if (isEmptyDir(path) && !mountPoints().includes(path)) rmdirSync(path);
  }
  removeRecord();
  if (record.createdPaths.includes(RECORD_DIR)) rmSync(RECORD_DIR, { recursive: true, force: true });
  const survivors = Object.values(record.pids).filter(
    (pid) => processAlive(pid) && ownedBy(pid, record.clusterDir),
  );
  if (survivors.length > 0) throw new Error(`processes ${survivors.join(', ')} of the node would not stop`);
}

/** Signs of a Kubernetes node on this host that no record of ours explains. */
export function foreignNodeSigns(): string[] {
  const signs: string[] = [];
  const saved = spawnSync('iptables-save', ['-t', 'filter'], { encoding: 'utf8' });
  if (saved.status === 0 && /^:KUBE-/m.test(saved.stdout)) signs.push('iptables has KUBE-* chains');
  for (const cgroup of podCgroups()) signs.push(`the cgroup ${cgroup} exists`);
  if (linkNames().includes(BRIDGE)) signs.push(`the bridge ${BRIDGE} exists`);
  if (existsSync('/run/containerd/containerd.sock')) signs.push('a containerd runs at /run/containerd');
  return signs;
}

export const iptablesAvailable = (): boolean =>
  spawnSync('iptables', ['--version'], { stdio: 'ignore' }).status === 0;
