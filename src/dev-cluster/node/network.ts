import { execFileSync } from 'node:child_process';

/**
 * The node's network: a bridge of its own with a private /24. The host holds the first address
 * (kube-apiserver, CoreDNS and the kubelet listen there); pods get the rest from host-local IPAM.
 * Pods reach the host, each other and Service ClusterIPs (routed to the host, where kube-proxy
 * rewrites them), and nothing else: no default route, no masquerading to the outside, and
 * forwarding enabled on this bridge alone.
 */
export const NODE_NAME = 'edgeward-node';
export const BRIDGE = 'edgeward0';
export const POD_SUBNET = '10.244.77.0/24';
export const HOST_ADDRESS = '10.244.77.1';
const PREFIX = POD_SUBNET.split('/')[1];

export const ip = (...args: string[]): string =>
  execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/** The names of the links the host has now. */
export function linkNames(): string[] {
  return (JSON.parse(ip('-j', 'link', 'show')) as Array<{ ifname: string }>).map((link) => link.ifname);
}

/** Refuses a subnet another interface already routes: the pods' addresses must be ours alone. */
export function assertSubnetFree(): void {
  const routes = JSON.parse(ip('-j', '-4', 'route', 'show')) as Array<{ dst: string; dev: string }>;
  const taken = routes.find((route) => route.dst === POD_SUBNET && route.dev !== BRIDGE);
  if (taken)
    throw new Error(`${POD_SUBNET} is already routed to ${taken.dev}: the node needs it for its pods`);
}

export function createBridge(): void {
  ip('link', 'add', BRIDGE, 'type', 'bridge');
  ip('addr', 'add', `${HOST_ADDRESS}/${PREFIX}`, 'dev', BRIDGE);
  ip('link', 'set', BRIDGE, 'up');
}

/** The CNI network: the bridge plugin on our bridge, host-local IPAM, a route to the Services. */
export function cniConfig(ipamDataDir: string, serviceCidr: string): string {
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
            routes: [{ dst: serviceCidr, gw: HOST_ADDRESS }],
          },
        },
      ],
    },
    null,
    2,
  );
}
