import { randomBytes, randomInt } from 'node:crypto';
import { ip } from './ip-command.js';
import { processAlive } from './process-alive.js';

/**
 * A local address for a Service endpoint served by a process of this machine, which is neither
 * loopback (EndpointSlices refuse 127.0.0.0/8) nor the machine's own interface address (traffic of
 * the tests and the demo stays off the machine's network): a veth pair made for it. Its end in the
 * root network namespace holds the .1 of a free /30 of 198.18.0.0/15 (the benchmarking range, so
 * no real network is shadowed), its peer (.2) lives in a network namespace of its own, both up; so
 * the address is a real local one that servers bind to and an EndpointSlice names.
 *
 * Names carry the owner's pid and a random tag: the root end `ewep<pid in base 36>r<tag>`, the
 * namespace `ewep-<pid>-<tag>`. Making one first removes those whose owner has died (a run that
 * was killed). Needs root (CAP_NET_ADMIN) and iproute2's `ip`.
 */
export interface EndpointNetwork {
  /** The root namespace's end of the pair: bind here, name it in the EndpointSlice. */
  address: string;
  /** The veth end in the root network namespace. */
  link: string;
  /** The network namespace holding the peer end. */
  namespace: string;
  /** What an earlier owner left behind and this one removed first (`veth NAME`, `netns NAME`). */
  leftoversRemoved: string[];
  /** Deletes the pair and the namespace; idempotent, and run at process exit if not called. */
  remove(): void;
}

const PREFIX = 'ewep';
/** The root end (or a stray peer): `ewep<pid, base 36>[rp]<4 hex>`, at most 15 characters. */
const LINK_NAME = /^ewep([0-9a-z]{1,6})[rp][0-9a-f]{4}$/;
const NAMESPACE_NAME = /^ewep-(\d+)-[0-9a-f]{4}$/;
/** 198.18.0.0/15: 32768 blocks of /30. */
const RANGE_START = ((198 << 24) | (18 << 16)) >>> 0;
const BLOCKS = 2 ** 17 / 4;

const dotted = (value: number) => [24, 16, 8, 0].map((shift) => (value >>> shift) & 255).join('.');

/** Why no endpoint network can be made here, or undefined. */
export function endpointNetworkUnavailable(): string | undefined {
  if (process.platform !== 'linux') return 'veth pairs and network namespaces are Linux only';
  if (process.getuid?.() !== 0) return 'making a veth pair and a network namespace needs root';
  try {
    ip('-V');
  } catch {
    return 'the ip command (iproute2) is not installed';
  }
  return undefined;
}

/** The IPv4 networks on this namespace's interfaces (`ip -br -4 addr`), as [first, last]. */
function ipv4Networks(): Array<{ link: string; first: number; last: number }> {
  const networks = [];
  for (const line of ip('-br', '-4', 'addr').split('\n')) {
    const [name = '', , ...addresses] = line.trim().split(/\s+/);
    for (const address of addresses) {
      const match = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(address);
      if (!match) continue;
      const value = match.slice(1, 5).reduce((sum, octet) => sum * 256 + Number(octet), 0);
      const size = 2 ** (32 - Number(match[5]));
      const first = value - (value % size);
      networks.push({ link: name.split('@')[0] ?? name, first, last: first + size - 1 });
    }
  }
  return networks;
}

const overlaps = (network: { first: number; last: number }, first: number) =>
  network.first <= first + 3 && first <= network.last;

/**
 * Gives `link` the .1 of a /30 of 198.18.0.0/15 no interface uses, from a random start. Another
 * process may pick the same block at the same moment: after adding, whoever sees the block on
 * another interface too gives it up and picks again.
 */
function claimBlock(link: string): number {
  for (let attempt = 0; attempt < 8; attempt++) {
    const used = ipv4Networks();
    const start = randomInt(BLOCKS);
    let block: number | undefined;
    for (let i = 0; i < BLOCKS && block === undefined; i++) {
      const first = RANGE_START + ((start + i) % BLOCKS) * 4;
      if (!used.some((network) => overlaps(network, first))) block = first;
    }
    if (block === undefined) break;
    const address = `${dotted(block + 1)}/30`;
    ip('addr', 'add', address, 'dev', link);
    if (!ipv4Networks().some((network) => network.link !== link && overlaps(network, block))) return block;
    ip('addr', 'del', address, 'dev', link);
  }
  throw new Error('found no free /30 in 198.18.0.0/15');
}

/** Removes the veth ends and namespaces of this module whose owner process has ended. */
export function removeStaleEndpointNetworks(): string[] {
  const removed: string[] = [];
  for (const line of ip('-br', 'link').split('\n')) {
    const name = line.trim().split(/\s+/)[0]?.split('@')[0] ?? '';
    const owner = LINK_NAME.exec(name)?.[1];
    if (owner === undefined || processAlive(Number.parseInt(owner, 36))) continue;
    try {
      ip('link', 'delete', name);
      removed.push(`veth ${name}`);
    } catch {
      // gone meanwhile (its namespace was deleted, or another process removed it)
    }
  }
  for (const line of ip('netns', 'list').split('\n')) {
    const name = line.trim().split(/\s+/)[0] ?? '';
    const owner = NAMESPACE_NAME.exec(name)?.[1];
    if (owner === undefined || processAlive(Number(owner))) continue;
    try {
      ip('netns', 'delete', name);
      removed.push(`netns ${name}`);
    } catch {
      // removed by another process meanwhile
    }
  }
  return removed;
}

/** Makes this process an endpoint network (see EndpointNetwork); throws when `ip` fails. */
export function createEndpointNetwork(): EndpointNetwork {
  const leftoversRemoved = removeStaleEndpointNetworks();
  const tag = randomBytes(2).toString('hex');
  const link = `${PREFIX}${process.pid.toString(36)}r${tag}`;
  const peer = `${PREFIX}${process.pid.toString(36)}p${tag}`;
  const namespace = `${PREFIX}-${process.pid}-${tag}`;
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    process.off('exit', remove);
    // Deleting one end of a veth pair deletes both; the namespace goes after.
    for (const args of [
      ['link', 'delete', link],
      ['netns', 'delete', namespace],
    ]) {
      try {
        ip(...args);
      } catch {
        // not made (a failed start) or already gone
      }
    }
  };
  process.on('exit', remove);
  try {
    ip('netns', 'add', namespace);
    ip('link', 'add', link, 'type', 'veth', 'peer', 'name', peer, 'netns', namespace);
    ip('-n', namespace, 'link', 'set', peer, 'up');
    ip('link', 'set', link, 'up');
    const block = claimBlock(link);
    ip('-n', namespace, 'addr', 'add', `${dotted(block + 2)}/30`, 'dev', peer);
    return { address: dotted(block + 1), link, namespace, leftoversRemoved, remove };
  } catch (error) {
    remove();
    throw error;
  }
}
