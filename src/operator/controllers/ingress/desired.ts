import { createHash } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ResourceKind } from '../../runtime/resource-types.js';
import {
  HTTPS_EDGE,
  HTTPS_EDGE_ROUTE,
  TLS_CERTIFICATE,
  TUNNEL,
  TUNNEL_CREDENTIAL,
} from '../resource-types.js';
import { tlsCertificateForSecret } from '../shared/tls-secret-certificate.js';

/**
 * What an Ingress of the class `edgeward` becomes: edgeward CRs, all owned by the Ingress (so the
 * garbage collector deletes them with it), which the operator's own controllers then carry to the
 * server and the edge. Pure: from the Ingress alone to the list of objects that should exist.
 * `spec.tls[].secretName` becomes a TLSCertificate with `secretRef` (the path every certificate
 * from a `kubernetes.io/tls` Secret takes: shared/tls-secret-certificate.ts).
 */

/** The IngressClass name, and the controller its `spec.controller` names. */
export const INGRESS_CLASS_NAME = 'edgeward';
export const INGRESS_CONTROLLER_NAME = 'edgeward.dev/ingress-controller';
/** The pre-IngressClass annotation some manifests still use instead of `spec.ingressClassName`. */
export const LEGACY_CLASS_ANNOTATION = 'kubernetes.io/ingress.class';
/** `edgeward.dev/ip-policy: <IPPolicy>[,<IPPolicy>...]`: IP restriction of every route of the Ingress. */
export const IP_POLICY_ANNOTATION = 'edgeward.dev/ip-policy';
/** On every owned CR: the hash of the spec the Ingress controller last wrote (replace when it differs). */
export const SPEC_HASH_ANNOTATION = 'edgeward.dev/ingress-spec-hash';
/** On every owned CR: the Ingress it was made for (`kubectl get edgeward -l ...`). */
export const INGRESS_LABEL = 'edgeward.dev/ingress';

export const INGRESS: ResourceKind = {
  group: 'networking.k8s.io',
  version: 'v1',
  kind: 'Ingress',
  plural: 'ingresses',
};

export interface ServiceBackendPort {
  number?: number;
  name?: string;
}

export interface IngressBackend {
  service?: { name: string; port?: ServiceBackendPort };
  resource?: unknown;
}

export interface IngressPath {
  path?: string;
  pathType?: 'Exact' | 'Prefix' | 'ImplementationSpecific';
  backend: IngressBackend;
}

export interface IngressObject extends KubernetesObject {
  spec?: {
    ingressClassName?: string;
    defaultBackend?: IngressBackend;
    tls?: { hosts?: string[]; secretName?: string }[];
    rules?: { host?: string; http?: { paths?: IngressPath[] } }[];
  };
  status?: { loadBalancer?: { ingress?: { hostname?: string; ip?: string }[] } };
}

/** One object the Ingress should own. */
export interface DesiredObject {
  kind: ResourceKind;
  name: string;
  spec: Record<string, unknown>;
  /** `SPEC_HASH_ANNOTATION`'s value. */
  hash: string;
}

/** A TLSCertificate the Ingress owns for a Secret of `spec.tls`, and the hosts listed with it. */
export interface IngressCertificate {
  name: string;
  secretName: string;
  hosts: string[];
}

export interface DesiredState {
  objects: DesiredObject[];
  /** What of the Ingress is not carried (an Event says so). */
  ignored: string[];
  /** The TLSCertificates of `spec.tls` (among `objects`), with their hosts. */
  certificates: IngressCertificate[];
}

/** Whether the Ingress is of the class `edgeward` (by `spec.ingressClassName` or the old annotation). */
export function isEdgewardIngress(ingress: IngressObject): boolean {
  const className =
    ingress.spec?.ingressClassName ?? ingress.metadata?.annotations?.[LEGACY_CLASS_ANNOTATION];
  return className === INGRESS_CLASS_NAME;
}

const hashOf = (value: unknown, length = 16) =>
  createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, length);

/** A DNS-subdomain name `<ingress>-<what>[-<hash>]`, short enough for a derived `<name>-token` Secret. */
function childName(ingress: string, what: string, key?: unknown): string {
  const suffix = key === undefined ? what : `${what}-${hashOf(key, 8)}`;
  return `${ingress.slice(0, 200 - suffix.length)}-${suffix}`;
}

const portLabel = (port: ServiceBackendPort | undefined) =>
  port?.number !== undefined ? String(port.number) : (port?.name ?? '');

type MatchType = 'exact_path' | 'path_prefix';

/** One edge route an Ingress path becomes. */
export interface PathRoute {
  matchType: MatchType;
  path: string;
}

/**
 * The edge routes of one Ingress path. `Exact` is `exact_path`. `Prefix` matches whole path
 * elements (`/foo` serves `/foo` and `/foo/bar`, not `/foobar`; a trailing slash is ignored), which
 * the edge's string prefix expresses as two routes: `exact_path /foo` and `path_prefix /foo/`
 * (`Prefix /` is `path_prefix /`, every path). `ImplementationSpecific` (and a missing pathType)
 * is the edge's own `path_prefix`, a string prefix: `/foo` also serves `/foobar`.
 */
export function pathRoutes(path: string | undefined, pathType: IngressPath['pathType']): PathRoute[] {
  const routePath = path || '/';
  if (pathType === 'Exact') return [{ matchType: 'exact_path', path: routePath }];
  if (pathType !== 'Prefix') return [{ matchType: 'path_prefix', path: routePath }];
  const trimmed = routePath.replace(/\/+$/, '');
  if (trimmed === '') return [{ matchType: 'path_prefix', path: '/' }];
  return [
    { matchType: 'exact_path', path: trimmed },
    { matchType: 'path_prefix', path: `${trimmed}/` },
  ];
}

/**
 * Which of two sources of one (host, match type, path) route wins (the edge takes one route per
 * match): a path of type Exact, then any other path (the first of equals), then the default backend.
 */
const RANK = { exact: 0, path: 1, defaultBackend: 2 } as const;

export function desiredObjects(ingress: IngressObject): DesiredState {
  const name = ingress.metadata?.name ?? '';
  const namespace = ingress.metadata?.namespace ?? '';
  const ingressLabel = `${namespace}.${name}`;
  const ignored: string[] = [];
  const policies = (ingress.metadata?.annotations?.[IP_POLICY_ANNOTATION] ?? '')
    .split(',')
    .map((policy) => policy.trim())
    .filter(Boolean);

  const hosts: string[] = [];
  const routes = new Map<
    string,
    {
      host: string;
      route: PathRoute;
      rank: number;
      /** What the route is for, in its description. */
      what: string;
      labels: Record<string, string>;
    }
  >();
  const services = new Map<
    string,
    { service: string; port: ServiceBackendPort | undefined; labels: Record<string, string> }
  >();
  /** The tunnel group of a Service backend (and its Tunnel). */
  const labelsOf = (service: NonNullable<IngressBackend['service']>) => {
    const port = portLabel(service.port);
    const labels = { ingress: ingressLabel, service: service.name, port: port || 'default' };
    services.set(`${service.name}:${port}`, { service: service.name, port: service.port, labels });
    return labels;
  };
  const addRoute = (
    host: string,
    route: PathRoute,
    rank: number,
    what: string,
    labels: Record<string, string>,
  ) => {
    const key = `${host}${route.path} ${route.matchType}`;
    const existing = routes.get(key);
    if (!existing || rank < existing.rank) routes.set(key, { host, route, rank, what, labels });
  };
  for (const [index, rule] of (ingress.spec?.rules ?? []).entries()) {
    if (!rule.host) {
      ignored.push(`spec.rules[${index}] (no host: not supported)`);
      continue;
    }
    const host = rule.host.toLowerCase();
    if (!hosts.includes(host)) hosts.push(host);
    for (const [pathIndex, path] of (rule.http?.paths ?? []).entries()) {
      const service = path.backend.service;
      if (!service) {
        ignored.push(`spec.rules[${index}].http.paths[${pathIndex}] (a resource backend: not supported)`);
        continue;
      }
      const labels = labelsOf(service);
      const rank = path.pathType === 'Exact' ? RANK.exact : RANK.path;
      const what = `${host}${path.path || '/'} (${path.pathType ?? 'ImplementationSpecific'})`;
      for (const route of pathRoutes(path.path, path.pathType)) addRoute(host, route, rank, what, labels);
    }
  }
  // The default backend: `path_prefix /` on every host, the route the edge tries last (any exact
  // path and any longer prefix come first), so it serves exactly what no rule matches.
  const defaultBackend = ingress.spec?.defaultBackend;
  if (defaultBackend && !defaultBackend.service) {
    ignored.push('spec.defaultBackend (a resource backend: not supported)');
  } else if (defaultBackend?.service && hosts.length === 0) {
    ignored.push('spec.defaultBackend (no rule names a host: an edge serves named hosts only)');
  } else if (defaultBackend?.service) {
    const labels = labelsOf(defaultBackend.service);
    for (const host of hosts) {
      addRoute(
        host,
        { matchType: 'path_prefix', path: '/' },
        RANK.defaultBackend,
        `${host} (defaultBackend)`,
        labels,
      );
    }
  }
  if (hosts.length === 0) return { objects: [], ignored, certificates: [] };
  const certificates = ingressCertificates(ingress);

  const edgeName = childName(name, 'ingress');
  const credentialName = childName(name, 'ingress-agent');
  const objects: Omit<DesiredObject, 'hash'>[] = [
    {
      kind: TUNNEL_CREDENTIAL,
      name: credentialName,
      spec: {
        description: `agents of the Ingress ${namespace}/${name}`,
        acl: [`bind:ingress=${ingressLabel}`, 'bind:service=*', 'bind:port=*'],
        deletionPolicy: 'Delete',
      },
    },
    // Before the edge: uploaded first, its names need no certificate from ACME meanwhile.
    ...certificates.map(({ name: certificateName, secretName }) => ({
      kind: TLS_CERTIFICATE,
      name: certificateName,
      spec: tlsCertificateForSecret(secretName, `Ingress ${namespace}/${name}: Secret ${secretName}`),
    })),
    {
      kind: HTTPS_EDGE,
      name: edgeName,
      spec: {
        description: `Ingress ${namespace}/${name}`,
        hostports: hosts.map((host) => `${host}:443`),
        deletionPolicy: 'Delete',
      },
    },
  ];
  for (const { host, route, what, labels } of routes.values()) {
    objects.push({
      kind: HTTPS_EDGE_ROUTE,
      name: childName(name, 'route', [host, route.path, route.matchType]),
      spec: {
        description: `Ingress ${namespace}/${name}: ${what} to ${labels.service}:${labels.port}`,
        edgeRef: { name: edgeName },
        matchType: route.matchType,
        match: `${host}${route.path}`,
        backend: { labels },
        ...(policies.length > 0
          ? { ipRestriction: { ipPolicyRefs: policies.map((policy) => ({ name: policy })) } }
          : {}),
        deletionPolicy: 'Delete',
      },
    });
  }
  for (const { service, port, labels } of services.values()) {
    objects.push({
      kind: TUNNEL,
      name: childName(name, 'tunnel', [service, portLabel(port)]),
      spec: {
        labels,
        forward: {
          service: {
            name: service,
            ...(port?.number !== undefined ? { port: port.number } : {}),
            ...(port?.name ? { portName: port.name } : {}),
          },
          protocol: 'http',
        },
        credentialRef: { name: credentialName },
      },
    });
  }
  return {
    objects: objects.map((object) => ({ ...object, hash: hashOf(object.spec) })),
    ignored,
    certificates,
  };
}

/**
 * One TLSCertificate per Secret `spec.tls` names (entries naming one Secret share it, with their
 * hosts). An entry without a `secretName` needs nothing: the edge serves its hosts a certificate
 * of the server (an uploaded one covering them, or ACME's).
 */
function ingressCertificates(ingress: IngressObject): IngressCertificate[] {
  const name = ingress.metadata?.name ?? '';
  const bySecret = new Map<string, IngressCertificate>();
  for (const entry of ingress.spec?.tls ?? []) {
    if (!entry.secretName) continue;
    let certificate = bySecret.get(entry.secretName);
    if (!certificate) {
      certificate = {
        name: childName(name, 'tls', entry.secretName),
        secretName: entry.secretName,
        hosts: [],
      };
      bySecret.set(entry.secretName, certificate);
    }
    for (const host of entry.hosts ?? []) {
      const lower = host.toLowerCase();
      if (!certificate.hosts.includes(lower)) certificate.hosts.push(lower);
    }
  }
  return [...bySecret.values()];
}
