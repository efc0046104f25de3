import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { podCgroups } from '../../src/dev-cluster/node/host-cleanup.js';
import { HOST_PATHS, HOST_SYSCTLS, mountPoints, readSysctl } from '../../src/dev-cluster/node/host-record.js';
import { BRIDGE } from '../../src/dev-cluster/node/network.js';

/**
 * What a node may change on this host, read independently of the node's own record: the kernel
 * settings, every iptables and ip6tables rule and chain (counters left out), nftables' tables,
 * the node's bridge and cgroups, the host paths its parts create, and mounts under them. Two
 * snapshots equal: the host is as it was. Links and /run/netns are left out, as other suites make
 * network namespaces at the same time.
 */
export interface HostSnapshot {
  sysctls: Record<string, string | undefined>;
  forwarding: Record<string, string | undefined>;
  iptables: Record<string, string[]>;
  nftTables: string[];
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

export function hostSnapshot(): HostSnapshot {
  const iptables: Record<string, string[]> = {};
  for (const binary of ['iptables-save', 'ip6tables-save']) {
    for (const table of ['filter', 'nat', 'mangle']) iptables[`${binary} ${table}`] = rules(binary, table);
  }
  const nft = spawnSync('nft', ['list', 'tables'], { encoding: 'utf8' });
  const shared = ['/run/netns'];
  return {
    sysctls: Object.fromEntries(HOST_SYSCTLS.map((name) => [name, readSysctl(name)])),
    forwarding: Object.fromEntries(
      ['all', 'default', BRIDGE].map((link) => [link, readSysctl(`net.ipv4.conf.${link}.forwarding`)]),
    ),
    iptables,
    nftTables: nft.status === 0 ? nft.stdout.split('\n').filter(Boolean).sort() : [],
    bridge: existsSync(`/sys/class/net/${BRIDGE}`),
    podCgroups: podCgroups(),
    paths: Object.fromEntries(
      HOST_PATHS.filter((path) => !shared.includes(path)).map((path) => [path, existsSync(path)]),
    ),
    mounts: mountPoints()
      .filter((mount) =>
        HOST_PATHS.some((path) => !shared.includes(path) && (mount === path || mount.startsWith(`${path}/`))),
      )
      .sort(),
  };
}
