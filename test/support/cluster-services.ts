import { inject } from 'vitest';

/**
 * The test control plane has no kube-proxy, pods or EndpointSlice controller: a Service's "pod" is
 * a server of the test process, and the test writes the EndpointSlice the controller would. Those
 * servers listen on the run's endpoint address: the root end of a veth pair the kubernetes global
 * setup made (src/lib/endpoint-network.ts), since EndpointSlices refuse loopback addresses and
 * test traffic stays off this machine's own interfaces.
 */

/**
 * Why this run has no endpoint address (no root, no `ip`, or making the veth pair failed), for
 * `describeUnless`; undefined when it has one. On CI that is a failure, not a skip: throws there.
 */
export function endpointSkipReason(): string | undefined {
  const reason = inject('endpointSkipReason') || undefined;
  if (reason !== undefined && process.env.CI)
    throw new Error(`this suite cannot run on CI without its endpoint address: ${reason}`);
  return reason;
}

/** The run's endpoint address: local servers bind to it, EndpointSlices name it. */
export function endpointAddress(): string {
  const address = inject('endpointAddress');
  if (!address) throw new Error(`this run has no endpoint address: ${inject('endpointSkipReason')}`);
  return address;
}

/** A Service with one port `http` (80), as manifests write it. */
export function serviceManifest(namespace: string, name: string) {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    spec: { ports: [{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }] },
  };
}

/** The slice the EndpointSlice controller would write for `name`'s one pod at `address:port`. */
export function endpointSliceManifest(
  namespace: string,
  name: string,
  address: string,
  port: number,
  ready = true,
) {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: `${name}-slice`,
      namespace,
      labels: {
        'kubernetes.io/service-name': name,
        'endpointslice.kubernetes.io/managed-by': 'edgeward-tests',
      },
    },
    addressType: 'IPv4',
    endpoints: [{ addresses: [address], conditions: { ready } }],
    ports: [{ name: 'http', port, protocol: 'TCP' }],
  };
}
