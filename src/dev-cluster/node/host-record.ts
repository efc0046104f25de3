import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What a node changes on the host, written down before it changes anything, so `down` (or the next
 * `up`, after a crash) puts everything back. It lives outside the cluster folder: one node per host.
 */
export const RECORD_DIR = '/run/edgeward-dev-node';
const RECORD_FILE = join(RECORD_DIR, 'host.json');

/**
 * Paths kubelet, containerd and the CNI plugins create whatever their configuration says (the
 * rest lives in the cluster folder). Those that did not exist before are removed afterwards.
 */
export const HOST_PATHS = [
  '/var/log/containers',
  '/var/log/pods',
  '/var/lib/kubelet',
  '/var/lib/cni',
  '/var/lib/containerd',
  '/opt/containerd',
  '/run/containerd',
  '/run/netns',
  '/run/kubernetes',
  '/etc/cni',
  '/etc/kubernetes',
  RECORD_DIR,
] as const;

/** Of HOST_PATHS, those other programs use too (`ip netns add`): removed only when empty. */
export const SHARED_HOST_PATHS: readonly string[] = ['/run/netns'];

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
  /** Whether /run/netns was a mount point before (containerd bind-mounts it). */
  netnsWasMounted: boolean;
  /** The node's processes, by part. */
  pids: Record<string, number>;
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

export function writeSysctl(name: string, value: string): void {
  writeFileSync(sysctlPath(name), `${value}\n`);
}

export function mountPoints(): string[] {
  // /proc/self/mountinfo: field 5 is the mount point, with spaces escaped as \040.
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => (line.split(' ')[4] ?? '').replaceAll('\\040', ' '));
}

/** Writes the record of the host as it is now; call before the node changes anything. */
export function recordHost(clusterDir: string): HostRecord {
  const sysctls: Record<string, string> = {};
  for (const name of HOST_SYSCTLS) {
    const value = readSysctl(name);
    if (value !== undefined) sysctls[name] = value;
  }
  const record: HostRecord = {
    clusterDir,
    sysctls,
    createdPaths: HOST_PATHS.filter((path) => !existsSync(path)),
    netnsWasMounted: mountPoints().includes('/run/netns'),
    pids: {},
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
  return JSON.parse(readFileSync(RECORD_FILE, 'utf8')) as HostRecord;
}

export function removeRecord(): void {
  rmSync(RECORD_FILE, { force: true });
}
