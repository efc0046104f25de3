import type { KubernetesObject } from '@kubernetes/client-node';
import type { ResourceKind } from '../../runtime/resource-types.js';

/** Where a Tunnel's carried connections go: a Service of the cluster resolved to one address. */

export const SERVICE: ResourceKind = { group: '', version: 'v1', kind: 'Service', plural: 'services' };
export const ENDPOINT_SLICE: ResourceKind = {
  group: 'discovery.k8s.io',
  version: 'v1',
  kind: 'EndpointSlice',
  plural: 'endpointslices',
};
/** The label the EndpointSlice controller puts on a Service's slices. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

export interface ServicePort {
  name?: string;
  port: number;
  targetPort?: number | string;
  protocol?: string;
}

export interface ServiceObject extends KubernetesObject {
  spec?: { clusterIP?: string; ports?: ServicePort[] };
}

export interface EndpointSliceObject extends KubernetesObject {
  addressType?: 'IPv4' | 'IPv6' | 'FQDN' | string;
  endpoints?: { addresses: string[]; conditions?: { ready?: boolean | null } | null }[] | null;
  ports?: { name?: string | null; port?: number | null; protocol?: string | null }[] | null;
}

/** How a Tunnel names its Service (spec.forward.service). */
export interface ServiceRef {
  name: string;
  port?: number | undefined;
  portName?: string | undefined;
}

export interface HostPort {
  host: string;
  port: number;
}

export type Upstream =
  | ({ ready: true; via: 'endpoint' | 'clusterIP' } & HostPort)
  | { ready: false; reason: 'ServiceNotFound' | 'NoReadyEndpoints'; message: string };

/**
 * Resolves a Service port to one address, as a client inside the cluster would reach it without
 * kube-proxy: a ready endpoint of the Service's EndpointSlices (`slices`: those labelled with its
 * name), on the slice port named like the Service port (its target port), else the Service port's
 * numeric targetPort (a named one is only known from the slices). Only when the Service has no EndpointSlice at all does its clusterIP serve,
 * on the Service port (a cluster whose endpoints are managed otherwise). `current`, when still a
 * ready endpoint, is kept, so an unrelated slice change does not move a tunnel; otherwise one
 * ready endpoint is picked at random (spreading Tunnels of one Service over its endpoints).
 */
export function resolveUpstream(
  service: ServiceObject | undefined,
  slices: readonly EndpointSliceObject[],
  ref: ServiceRef,
  current?: HostPort,
  random: () => number = Math.random,
): Upstream {
  if (!service) {
    return { ready: false, reason: 'ServiceNotFound', message: `Service ${ref.name} does not exist` };
  }
  const port = servicePort(service, ref);
  if (typeof port === 'string') return { ready: false, reason: 'ServiceNotFound', message: port };
  if (slices.length === 0) {
    const clusterIP = service.spec?.clusterIP;
    if (clusterIP && clusterIP !== 'None')
      return { ready: true, via: 'clusterIP', host: clusterIP, port: port.port };
    return {
      ready: false,
      reason: 'NoReadyEndpoints',
      message: `Service ${ref.name} has no EndpointSlice and no clusterIP`,
    };
  }
  const candidates: HostPort[] = [];
  for (const slice of slices) {
    const target = slicePort(slice, port);
    if (target === undefined) continue;
    for (const endpoint of slice.endpoints ?? []) {
      // A missing ready condition means ready (discovery/v1); the first address is the endpoint's.
      const address = endpoint.addresses[0];
      if (endpoint.conditions?.ready === false || !address) continue;
      candidates.push({ host: address, port: target });
    }
  }
  if (candidates.length === 0) {
    return {
      ready: false,
      reason: 'NoReadyEndpoints',
      message: `Service ${ref.name} has no ready endpoint for port ${describePort(port)}`,
    };
  }
  const kept = current && candidates.find((c) => c.host === current.host && c.port === current.port);
  const chosen = kept ?? candidates[Math.floor(random() * candidates.length)] ?? candidates[0];
  return { ready: true, via: 'endpoint', ...(chosen as HostPort) };
}

/** The Service port the ref names, or why there is none. */
function servicePort(service: ServiceObject, ref: ServiceRef): ServicePort | string {
  const ports = service.spec?.ports ?? [];
  const name = `Service ${ref.name}`;
  if (ref.port !== undefined) {
    return ports.find((port) => port.port === ref.port) ?? `${name} has no port ${ref.port}`;
  }
  if (ref.portName !== undefined) {
    return ports.find((port) => port.name === ref.portName) ?? `${name} has no port named ${ref.portName}`;
  }
  if (ports.length === 1 && ports[0]) return ports[0];
  return `${name} has ${ports.length} ports: name one with forward.service.port or portName`;
}

/** The port of `slice` that serves the Service port (slice ports carry the Service port's name). */
function slicePort(slice: EndpointSliceObject, port: ServicePort): number | undefined {
  const protocol = port.protocol ?? 'TCP';
  const match = (slice.ports ?? []).find(
    (candidate) => (candidate.name ?? '') === (port.name ?? '') && (candidate.protocol ?? 'TCP') === protocol,
  );
  if (match?.port) return match.port;
  // No slice port for it: a numeric target port (absent means the Service port) still says where.
  if (port.targetPort === undefined) return port.port;
  return typeof port.targetPort === 'number' ? port.targetPort : undefined;
}

function describePort(port: ServicePort): string {
  return port.name ? `${port.name} (${port.port})` : String(port.port);
}
