import { networkInterfaces } from 'node:os';

/**
 * The test control plane has no kube-proxy, pods or EndpointSlice controller: a Service's "pod" is
 * a server of the test process, and the test writes the EndpointSlice the controller would.
 */

/** The first non-internal IPv4 address of this machine (EndpointSlices refuse loopback). */
export function nonLoopbackAddress(): string {
  for (const addresses of Object.values(networkInterfaces())) {
    for (const address of addresses ?? [])
      if (address.family === 'IPv4' && !address.internal) return address.address;
  }
  throw new Error('this test needs a non-loopback IPv4 address: EndpointSlices refuse loopback ones');
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
