import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { podCgroups } from '../../src/dev-cluster/node/cgroups.js';
import { HOST_PATHS, HOST_SYSCTLS, mountPoints, readSysctl } from '../../src/dev-cluster/node/host-record.js';
import { BRIDGE } from '../../src/dev-cluster/node/network.js';

/**
 * What a node may change on this host, read independently of the node's own record: the kernel
 * settings, every iptables and ip6tables rule and chain (counters left out), the node's bridge and
 * cgroups, the host paths its parts create, and mounts under them. Two snapshots equal: the host
 * is as it was. Links and network namespaces are left out, as other suites make their own at the
 * same time; so are kernel settings that did not exist before (loading nf_conntrack adds some).
 */
export interface HostSnapshot {
  sysctls: Record<string, string>;
  forwarding: Record<string, string | undefined>;
  iptables: Record<string, string[]>;
  bridge: boolean;
  podCgroups: string[];
  paths: Record<string, boolean>;
  mounts: string[];
}

function rules(binary: string, table: string): string[] {
  const saved = spawnSync(binary, ['-t', table], { encoding: 'utf8' });
  if (saved.status !== 0) return [`(${binary} -t ${table} failed: ${saved.stderr.trim()})`];
  return saved.stdout
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => line.replace(/ \[\d+:\d+\]$/, ''))
    .sort();
}

/** A snapshot of the host; `like` limits the kernel settings to those an earlier snapshot had. */
export function hostSnapshot(like?: HostSnapshot): HostSnapshot {
  const iptables: Record<string, string[]> = {};
  for (const binary of ['iptables-save', 'ip6tables-save']) {
    for (const table of ['filter', 'nat', 'mangle']) iptables[`${binary} ${table}`] = rules(binary, table);
  }
  const sysctls: Record<string, string> = {};
  for (const name of like ? Object.keys(like.sysctls) : HOST_SYSCTLS) {
    const value = readSysctl(name);
    if (value !== undefined) sysctls[name] = value;
  }
  const paths = HOST_PATHS.map(({ path }) => path);
  return {
    sysctls,
    forwarding: Object.fromEntries(
      ['all', 'default', BRIDGE].map((link) => [link, readSysctl(`net.ipv4.conf.${link}.forwarding`)]),
    ),
    iptables,
    bridge: existsSync(`/sys/class/net/${BRIDGE}`),
    podCgroups: podCgroups(),
    paths: Object.fromEntries(paths.map((path) => [path, existsSync(path)])),
    mounts: mountPoints()
      .filter((mount) => paths.some((path) => mount === path || mount.startsWith(`${path}/`)))
      .sort(),
  };
}
