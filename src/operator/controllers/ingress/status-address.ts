import { isIP } from 'node:net';

/**
 * `edgeward operator --ingress-status-address HOST_OR_IP[,…]`: the public address of the edges,
 * written to `status.loadBalancer.ingress` of every Ingress of the class `edgeward` once its
 * HTTPSEdge is Ready, so that external-dns (and anyone reading the status) points the Ingress's
 * hosts at the edges. An IP address goes in `ip`, anything else in `hostname` (external-dns then
 * makes a CNAME to it).
 */

export type LoadBalancerIngress = { ip: string } | { hostname: string };

/** What the Ingress controller takes from the operator's flags. */
export interface IngressSettings {
  /** `--ingress-status-address`; none: the status lists the Ingress's own hosts, as before. */
  statusAddresses?: LoadBalancerIngress[];
}

const DNS_LABEL = '[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?';
const DNS_NAME = new RegExp(`^${DNS_LABEL}(\\.${DNS_LABEL})*$`);

/** Parses the flag's comma-separated value; throws naming the flag and the address at fault. */
export function parseIngressStatusAddresses(text: string): LoadBalancerIngress[] {
  const addresses = text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  if (addresses.length === 0) throw new Error('--ingress-status-address: give an IP address or a host name');
  return addresses.map((address) => {
    // [2001:db8::1] as written in URLs is the address inside the brackets.
    const unbracketed = address.replace(/^\[(.*)\]$/, '$1');
    if (isIP(unbracketed) !== 0) return { ip: unbracketed };
    const hostname = address.toLowerCase().replace(/\.$/, '');
    if (hostname.length > 253 || !DNS_NAME.test(hostname)) {
      throw new Error(`--ingress-status-address: ${address} is neither an IP address nor a DNS name`);
    }
    return { hostname };
  });
}

/**
 * `status.loadBalancer.ingress` of a served Ingress: the edges' address when the flag gives it,
 * else the edge's hosts (what `kubectl get ingress` shows); none while `servedHosts` is empty
 * (its HTTPSEdge not Ready yet).
 */
export function loadBalancerIngresses(
  servedHosts: readonly string[],
  statusAddresses: readonly LoadBalancerIngress[],
): LoadBalancerIngress[] {
  if (servedHosts.length === 0) return [];
  return statusAddresses.length > 0 ? [...statusAddresses] : servedHosts.map((hostname) => ({ hostname }));
}
