import type { KubernetesObject } from '@kubernetes/client-node';
import type { EdgewardClient } from '../../../client/index.js';
import type { RegisteredController } from '../../runtime/controller.js';
import { isConflict, isKubeNotFound } from '../../runtime/kube-errors.js';
import type { Manager } from '../../runtime/manager.js';
import type { ResourceClient } from '../../runtime/resource-client.js';
import { sameJson } from '../../runtime/same-json.js';
import { controllerReference, ownersOf, referenceStateChanged } from '../../runtime/watch-mappers.js';
import {
  HTTPS_EDGE,
  HTTPS_EDGE_ROUTE,
  TLS_CERTIFICATE,
  TUNNEL,
  TUNNEL_CREDENTIAL,
} from '../resource-types.js';
import { CoverageWarnings, type UploadedCertificate } from './certificate-coverage.js';
import {
  type DesiredObject,
  desiredObjects,
  INGRESS,
  INGRESS_LABEL,
  type IngressObject,
  isEdgewardIngress,
  SPEC_HASH_ANNOTATION,
} from './desired.js';
import { type IngressSettings, loadBalancerIngresses } from './status-address.js';

/**
 * The kinds an Ingress owns, in the order they are made (a credential before its Tunnels, the
 * certificates of `spec.tls` before the edge).
 */
export const OWNED_KINDS = [
  TUNNEL_CREDENTIAL,
  TLS_CERTIFICATE,
  HTTPS_EDGE,
  HTTPS_EDGE_ROUTE,
  TUNNEL,
] as const;

type OwnedObject = KubernetesObject & {
  spec?: Record<string, unknown>;
  status?: UploadedCertificate & { hostports?: string[]; conditions?: { type: string; status: string }[] };
};

const isReady = (object: OwnedObject | undefined) =>
  object?.status?.conditions?.some(
    (condition) => condition.type === 'Ready' && condition.status === 'True',
  ) === true;

const controllerOf = (object: KubernetesObject) =>
  object.metadata?.ownerReferences?.find((reference) => reference.controller);

/** The owned object's Ingress changes when it appears, goes, is edited or flips Ready. */
function ownedChanged(previous: KubernetesObject, object: KubernetesObject): boolean {
  const hostports = (edge: KubernetesObject) => (edge as OwnedObject).status?.hostports;
  return (
    referenceStateChanged(previous, object) ||
    previous.metadata?.generation !== object.metadata?.generation ||
    !sameJson(hostports(previous), hostports(object))
  );
}

/**
 * Ingress (networking.k8s.io/v1) of the IngressClass `edgeward` -> edgeward CRs it owns: a
 * TunnelCredential, a TLSCertificate per Secret of `spec.tls` (following the Secret as it renews),
 * an HTTPSEdge of its hosts, an HTTPSEdgeRoute per (host, path) and a Tunnel per backend Service
 * port (see `desired.ts`). It writes CRs only; their controllers do the API work (ids, status,
 * finalizers), and the garbage collector deletes them with the Ingress. Once the HTTPSEdge is
 * Ready its status gets the edges' address (`--ingress-status-address`), or else the edge's hosts.
 */
export function registerIngress(
  manager: Manager,
  _api: EdgewardClient,
  settings: { ingress?: IngressSettings } = {},
): RegisteredController<IngressObject> {
  const statusAddresses = settings.ingress?.statusAddresses ?? [];
  const ingresses = manager.resources<IngressObject>(INGRESS);
  const clients = new Map(OWNED_KINDS.map((kind) => [kind.kind, manager.resources<OwnedObject>(kind)]));
  const informers = new Map(OWNED_KINDS.map((kind) => [kind.kind, manager.informer<OwnedObject>(kind)]));
  const clientOf = (object: DesiredObject) => clients.get(object.kind.kind) as ResourceClient<OwnedObject>;

  /**
   * The objects whose controller is an Ingress of this name (from the caches), whichever its uid:
   * those of an earlier Ingress of the name are stale.
   */
  const ownedBy = (namespace: string, name: string) =>
    OWNED_KINDS.flatMap((kind) =>
      (informers.get(kind.kind)?.cache.list(namespace) ?? []).flatMap((object) => {
        const owner = controllerOf(object);
        return owner?.kind === INGRESS.kind && owner.name === name ? [{ kind, object, uid: owner.uid }] : [];
      }),
    );

  /** `<uid> <generation>` of each Ingress (by key) whose unsupported parts an Event has reported. */
  const warned = new Map<string, string>();
  const coverage = new CoverageWarnings(manager.events);
  let registered: RegisteredController<IngressObject> | undefined;
  registered = manager.register<IngressObject>({
    kind: INGRESS,
    watches: OWNED_KINDS.map((kind) => ({ kind, map: ownersOf(INGRESS), shouldEnqueue: ownedChanged })),
    async reconcile({ namespace = '', name }, { log }) {
      const found = registered?.informer.cache.get(namespace, name);
      // Gone or going: what it owns goes too (the garbage collector would, where one runs).
      const ingress = found?.metadata?.deletionTimestamp ? undefined : found;
      const uid = ingress?.metadata?.uid ?? '';
      const ours = ingress !== undefined && isEdgewardIngress(ingress);
      const { objects, ignored, certificates } = ours
        ? desiredObjects(ingress)
        : { objects: [], ignored: [], certificates: [] };
      const owned = ownedBy(namespace, name);
      let pending = false;

      const wanted = new Set(objects.map((object) => `${object.kind.kind}/${object.name}`));
      for (const { kind, object, uid: ownerUid } of owned) {
        const childName = object.metadata?.name ?? '';
        if (object.metadata?.deletionTimestamp) continue;
        if (ownerUid === uid && wanted.has(`${kind.kind}/${childName}`)) continue;
        try {
          await clients.get(kind.kind)?.delete(namespace, childName, { uid: object.metadata?.uid ?? '' });
          log.info({ kind: kind.kind, child: childName }, 'deleted: not in the Ingress (any more)');
        } catch (error) {
          if (!isKubeNotFound(error) && !isConflict(error)) throw error;
        }
      }
      if (!ingress) {
        warned.delete(`${namespace}/${name}`);
        coverage.forget(`${namespace}/${name}`);
        return;
      }

      for (const desired of objects) {
        const existing = informers.get(desired.kind.kind)?.cache.get(namespace, desired.name);
        const body: OwnedObject = {
          apiVersion: 'edgeward.dev/v1alpha1',
          kind: desired.kind.kind,
          metadata: {
            name: desired.name,
            namespace,
            labels: { [INGRESS_LABEL]: name },
            annotations: { [SPEC_HASH_ANNOTATION]: desired.hash },
            ownerReferences: [controllerReference(ingress, INGRESS)],
          },
          spec: desired.spec,
        };
        if (!existing) {
          try {
            await clientOf(desired).create(body);
            log.info({ kind: desired.kind.kind, child: desired.name }, 'created for the Ingress');
          } catch (error) {
            // Made a moment ago (the cache has not seen it yet): the next reconcile compares it.
            if (!isConflict(error)) throw error;
            pending = true;
          }
          continue;
        }
        if (controllerOf(existing)?.uid !== uid) {
          // A stale object being deleted (just above, or by the garbage collector): made again after.
          if (existing.metadata?.deletionTimestamp || controllerOf(existing)?.name === name) {
            pending = true;
            continue;
          }
          await manager.events.warning(
            ingress,
            'NameTaken',
            `${desired.kind.kind} ${desired.name} exists and is not this Ingress's: left alone`,
          );
          continue;
        }
        if (existing.metadata?.annotations?.[SPEC_HASH_ANNOTATION] === desired.hash) continue;
        await clientOf(desired).replace({
          ...existing,
          metadata: {
            ...existing.metadata,
            labels: { ...existing.metadata?.labels, ...body.metadata?.labels },
            annotations: { ...existing.metadata?.annotations, ...body.metadata?.annotations },
          },
          spec: desired.spec,
        });
        log.info({ kind: desired.kind.kind, child: desired.name }, 'updated for the Ingress');
      }

      // Once per generation of the Ingress, not at every resync.
      const seen = `${uid} ${ingress.metadata?.generation ?? 0}`;
      if (ours && ignored.length > 0 && warned.get(`${namespace}/${name}`) !== seen) {
        await manager.events.warning(ingress, 'Unsupported', `not carried: ${ignored.join('; ')}`);
        warned.set(`${namespace}/${name}`, seen);
      }

      // A Secret's certificate that does not name a host listed with it: said once per certificate.
      await coverage.report(ingress, certificates, (certificateName) => {
        const uploaded = informers.get(TLS_CERTIFICATE.kind)?.cache.get(namespace, certificateName);
        const current = uploaded && isReady(uploaded) && controllerOf(uploaded)?.uid === uid;
        return current ? (uploaded.status ?? {}) : undefined;
      });

      // status.loadBalancer, once its HTTPSEdge is Ready: the edges' address, or the edge's hosts.
      const edge = objects.find((object) => object.kind === HTTPS_EDGE);
      const edgeObject = edge ? informers.get(HTTPS_EDGE.kind)?.cache.get(namespace, edge.name) : undefined;
      const hostnames = isReady(edgeObject)
        ? [...new Set((edgeObject?.status?.hostports ?? []).map((hostport) => hostport.replace(/:\d+$/, '')))]
        : [];
      const addresses = loadBalancerIngresses(hostnames, statusAddresses);
      if (ours) {
        await manager.statusWriter.write(ingresses, ingress, (current) => ({
          ...current.status,
          loadBalancer: addresses.length > 0 ? { ingress: addresses } : {},
        }));
      }
      return pending ? { requeueAfterMs: 1000 } : undefined;
    },
  });
  return registered;
}
