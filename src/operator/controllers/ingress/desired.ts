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

/** Exact → exact_path; Prefix and ImplementationSpecific → path_prefix. */
const matchTypeOf = (pathType: IngressPath['pathType']) =>
  pathType === 'Exact' ? 'exact_path' : 'path_prefix';

export function desiredObjects(ingress: IngressObject): DesiredState {
  const name = ingress.metadata?.name ?? '';
  const namespace = ingress.metadata?.namespace ?? '';
  const ingressLabel = `${namespace}.${name}`;
  const ignored: string[] = [];
  if (ingress.spec?.defaultBackend)
    ignored.push('spec.defaultBackend (not supported: give every rule a host)');
  const policies = (ingress.metadata?.annotations?.[IP_POLICY_ANNOTATION] ?? '')
    .split(',')
    .map((policy) => policy.trim())
    .filter(Boolean);

  const hosts: string[] = [];
  const routes = new Map<
    string,
    { host: string; path: string; pathType: IngressPath['pathType']; labels: Record<string, string> }
  >();
  const services = new Map<
    string,
    { service: string; port: ServiceBackendPort | undefined; labels: Record<string, string> }
  >();
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
      const port = portLabel(service.port);
      const labels = { ingress: ingressLabel, service: service.name, port: port || 'default' };
      services.set(`${service.name}:${port}`, { service: service.name, port: service.port, labels });
      const routePath = path.path || '/';
      // The first of two identical (host, path) wins, as in most ingress controllers.
      const key = `${host}${routePath} ${matchTypeOf(path.pathType)}`;
      if (!routes.has(key)) routes.set(key, { host, path: routePath, pathType: path.pathType, labels });
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
  for (const { host, path, pathType, labels } of routes.values()) {
    objects.push({
      kind: HTTPS_EDGE_ROUTE,
      name: childName(name, 'route', [host, path, matchTypeOf(pathType)]),
      spec: {
        description: `Ingress ${namespace}/${name}: ${host}${path} to ${labels.service}:${labels.port}`,
        edgeRef: { name: edgeName },
        matchType: matchTypeOf(pathType),
        match: `${host}${path}`,
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
