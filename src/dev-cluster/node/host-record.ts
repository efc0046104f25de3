import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What a node changes on the host, written down before it changes anything, so `down` (or the next
 * `up`, after a crash) puts everything back. It lives outside the cluster folder: one node per host.
 */
export const RECORD_DIR = '/run/edgeward-dev-node';
const RECORD_FILE = join(RECORD_DIR, 'host.json');

/**
 * Paths the kubelet and the CNI plugins create whatever their configuration says (everything else
 * lives in the cluster folder). Removed afterwards only if they did not exist before: `tree` ones
 * (theirs alone) whole; from `empty` ones (others may use them: containerd's shims put their
 * sockets in /run/containerd/s whatever containerd's state folder is) only sockets nothing listens
 * on and the folders that are then empty.
 */
export const HOST_PATHS: ReadonlyArray<{ path: string; remove: 'tree' | 'empty' }> = [
  { path: '/var/log/containers', remove: 'tree' },
  { path: '/var/log/pods', remove: 'tree' },
  { path: '/var/lib/kubelet', remove: 'tree' },
  { path: '/var/lib/cni', remove: 'tree' },
  { path: '/run/containerd', remove: 'empty' },
  { path: '/run/kubernetes', remove: 'empty' },
  { path: RECORD_DIR, remove: 'tree' },
];

/** Kernel settings kubelet and kube-proxy write; restored to what they were. */
export const HOST_SYSCTLS = [
  'vm.overcommit_memory',
  'vm.panic_on_oom',
  'kernel.panic',
  'kernel.panic_on_oops',
  'kernel.keys.root_maxkeys',
  'kernel.keys.root_maxbytes',
  'net.ipv4.ip_forward',
  'net.ipv4.conf.all.forwarding',
  'net.ipv4.conf.all.route_localnet',
  'net.ipv6.conf.all.forwarding',
  'net.bridge.bridge-nf-call-iptables',
  'net.netfilter.nf_conntrack_max',
  'net.netfilter.nf_conntrack_tcp_timeout_established',
  'net.netfilter.nf_conntrack_tcp_timeout_close_wait',
  'net.netfilter.nf_conntrack_tcp_be_liberal',
] as const;

export interface HostRecord {
  /** The cluster folder the node belongs to (its processes' command lines name it). */
  clusterDir: string;
  /** Each sysctl's value before the node started (absent keys did not exist). */
  sysctls: Record<string, string>;
  /** HOST_PATHS that did not exist before. */
  createdPaths: string[];
  /** The node's processes, by part. */
  pids: Record<string, number>;
  /** Set once the node was Ready; a record without it whose starter is gone is a crashed start. */
  ready?: boolean;
  /** The process that started the node, and, for a test's node, owns it: gone means a crash. */
  starter: number;
  ownedByStarter: boolean;
  /** The sysctls as the node left them once Ready: only what still has the node's value is restored. */
  nodeSysctls?: Record<string, string>;
  /** kube-proxy's binary, whose `--cleanup` removes its rules. */
  kubeProxy?: string;
}

const sysctlPath = (name: string) => `/proc/sys/${name.replaceAll('.', '/')}`;

export function readSysctl(name: string): string | undefined {
  try {
    return readFileSync(sysctlPath(name), 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** The values of HOST_SYSCTLS that exist on this host. */
export function readSysctls(): Record<string, string> {
  const values: Record<string, string> = {};
  for (const name of HOST_SYSCTLS) {
    const value = readSysctl(name);
    if (value !== undefined) values[name] = value;
  }
  return values;
}

export function writeSysctl(name: string, value: string): void {
  writeFileSync(sysctlPath(name), `${value}\n`);
}

export function mountPoints(): string[] {
  // /proc/self/mountinfo: field 5 is the mount point, with space, tab, newline and backslash
  // escaped as octal (\040, \011, \012, \134).
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) =>
      (line.split(' ')[4] ?? '').replace(/\\([0-7]{3})/g, (_, octal: string) =>
        String.fromCharCode(Number.parseInt(octal, 8)),
      ),
    );
}

/** Writes the record of the host as it is now; call before the node changes anything. */
export function recordHost(clusterDir: string, ownedByStarter: boolean): HostRecord {
  const record: HostRecord = {
    clusterDir,
    sysctls: readSysctls(),
    createdPaths: HOST_PATHS.map(({ path }) => path).filter((path) => !existsSync(path)),
    pids: {},
    starter: process.pid,
    ownedByStarter,
  };
  mkdirSync(RECORD_DIR, { recursive: true, mode: 0o700 });
  saveRecord(record);
  return record;
}

export function saveRecord(record: HostRecord): void {
  // Whole or not at all: a crash mid-write must not leave a record nobody can read.
  writeFileSync(`${RECORD_FILE}.tmp`, JSON.stringify(record, null, 2));
  renameSync(`${RECORD_FILE}.tmp`, RECORD_FILE);
}

export function readRecord(): HostRecord | undefined {
  if (!existsSync(RECORD_FILE)) return undefined;
  try {
    const record = JSON.parse(readFileSync(RECORD_FILE, 'utf8')) as HostRecord;
    if (typeof record.clusterDir !== 'string' || typeof record.pids !== 'object')
      throw new Error('not a node record');
    return record;
  } catch (error) {
    throw new Error(`${RECORD_FILE} is unreadable; remove it after checking the host by hand`, {
      cause: error,
    });
  }
}

export function removeRecord(): void {
  rmSync(RECORD_FILE, { force: true });
}
