import { cidrRange, ip, rangesOverlap } from '../../lib/ip-command.js';
import { SERVICE_CIDR } from '../control-plane.js';

/**
 * The node's network: a bridge of its own with a private /24. The host holds the first address
 * (kube-apiserver, CoreDNS and the kubelet listen there); pods get the rest from host-local IPAM.
 * Pods reach the host, each other and Service ClusterIPs (routed to the host, where kube-proxy
 * rewrites them), and nothing else: no default route, no masquerading to the outside, and
 * forwarding enabled on this bridge alone. The Service range is routed onto the bridge too, so a
 * ClusterIP kube-proxy has not rewritten (yet) never leaves the machine by its default route.
 */
export const NODE_NAME = 'edgeward-node';
export const BRIDGE = 'edgeward0';
export const POD_SUBNET = '10.244.77.0/24';
export const HOST_ADDRESS = '10.244.77.1';
const PREFIX = POD_SUBNET.split('/')[1];

/** The names of the links the host has now. */
export function linkNames(): string[] {
  return (JSON.parse(ip('-j', 'link', 'show')) as Array<{ ifname: string }>).map((link) => link.ifname);
}

/** Refuses ranges another route already covers (the default route aside): they must be ours alone. */
export function assertRangesFree(): void {
  const routes = JSON.parse(ip('-j', '-4', 'route', 'show')) as Array<{ dst: string; dev: string }>;
  for (const range of [POD_SUBNET, SERVICE_CIDR]) {
    const taken = routes.find(
      (route) =>
        route.dst !== 'default' &&
        route.dev !== BRIDGE &&
        rangesOverlap(cidrRange(route.dst), cidrRange(range)),
    );
    if (taken)
      throw new Error(
        `${range} overlaps ${taken.dst} on ${taken.dev}: the node needs it for its pods and Services`,
      );
  }
}

/** The bridge with the host's address, and the Service range routed onto it (both go with it). */
export function createBridge(): void {
  ip('link', 'add', BRIDGE, 'type', 'bridge');
  ip('addr', 'add', `${HOST_ADDRESS}/${PREFIX}`, 'dev', BRIDGE);
  ip('link', 'set', BRIDGE, 'up');
  ip('route', 'add', SERVICE_CIDR, 'dev', BRIDGE, 'src', HOST_ADDRESS);
}

/** The CNI network: the bridge plugin on our bridge, host-local IPAM, a route to the Services. */
export function cniConfig(ipamDataDir: string): string {
  return JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: 'edgeward',
      plugins: [
        {
          type: 'bridge',
          bridge: BRIDGE,
          // The host holds the address already; pods get no default route and no masquerading.
          isGateway: false,
          ipMasq: false,
          // A pod may reach itself through its Service.
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            dataDir: ipamDataDir,
            ranges: [
              [
                {
                  subnet: POD_SUBNET,
                  rangeStart: '10.244.77.10',
                  rangeEnd: '10.244.77.250',
                  gateway: HOST_ADDRESS,
                },
              ],
            ],
            routes: [{ dst: SERVICE_CIDR, gw: HOST_ADDRESS }],
          },
        },
      ],
    },
    null,
    2,
  );
}
