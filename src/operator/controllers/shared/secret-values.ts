import type { KubernetesObject } from '@kubernetes/client-node';
import type { WatchSpec } from '../../runtime/controller.js';
import { getIfExists } from '../../runtime/get-if-exists.js';
import type { KubeResources } from '../../runtime/resource-client.js';
import { SECRET } from '../../runtime/resource-types.js';
import type { Resolution } from '../managed/managed-resource.js';

export interface SecretObject extends KubernetesObject {
  type?: string;
  data?: Record<string, string>;
}

/** A `secretKeyRef` of a spec, with the spec path it sits at (for messages). */
export interface SecretKeyRequest {
  field: string;
  ref: { name: string; key: string };
}

/**
 * The values read, by spec path, and the resourceVersion of each Secret key they came from, by
 * `versionKey` (`<secret>/<key>`): pointing a ref at another key of the same Secret is a change
 * too, though the Secret's resourceVersion is not.
 */
export interface SecretValues {
  values: Map<string, string>;
  versions: Record<string, string>;
}

/** The `versions` (and status.secretVersions) entry of a Secret key. */
export const versionKey = (ref: { name: string; key: string }) => `${ref.name}/${ref.key}`;

/**
 * The watch of the Secrets specs name: a Secret created, edited or deleted reconciles the objects
 * naming it (through the reference index; declare them with `secretReferences`). It caches only
 * the Secrets some spec names (`cache: 'mapped'`), not every Secret of the watched namespaces;
 * the server leaves out the two kinds no spec names and that make up most of a cluster's Secret
 * bytes: Helm release records and legacy service-account tokens. Values are read with a GET
 * (`readSecretValues`), or from this cache with a GET when it misses (a Secret named after its
 * last change is cached only from its next one).
 */
export const NAMED_SECRETS_WATCH: WatchSpec = {
  kind: SECRET,
  selectors: { fieldSelector: 'type!=helm.sh/release.v1,type!=kubernetes.io/service-account-token' },
  cache: 'mapped',
};

/** The reference-index entries of the Secrets a spec names (see `NAMED_SECRETS_WATCH`). */
export function secretReferences(requests: readonly SecretKeyRequest[]): { kind: string; name: string }[] {
  return requests.map(({ ref }) => ({ kind: SECRET.kind, name: ref.name }));
}

/**
 * Reads the Secret keys a spec names (same namespace). Not ready, naming the field, when a Secret
 * or key is missing or empty. Values are never logged or put in status; only resourceVersions
 * are kept, so `secretsChanged` can tell when to send them again.
 */
export async function readSecretValues(
  secrets: KubeResources<SecretObject>,
  namespace: string | undefined,
  requests: readonly SecretKeyRequest[],
): Promise<Resolution<SecretValues>> {
  const values = new Map<string, string>();
  const versions: Record<string, string> = {};
  const read = new Map<string, SecretObject | undefined>();
  for (const { field, ref } of requests) {
    if (!read.has(ref.name)) {
      read.set(
        ref.name,
        await getIfExists(secrets, namespace, ref.name, `${field}: reading Secret ${ref.name}`),
      );
    }
    const secret = read.get(ref.name);
    if (!secret) {
      return notReady('SecretNotFound', `${field}: Secret ${ref.name} does not exist`);
    }
    const encoded = secret.data?.[ref.key];
    const value = encoded ? Buffer.from(encoded, 'base64').toString('utf8') : '';
    if (value === '') {
      return notReady('SecretKeyMissing', `${field}: Secret ${ref.name} has no (or an empty) key ${ref.key}`);
    }
    values.set(field, value);
    versions[versionKey(ref)] = secret.metadata?.resourceVersion ?? '';
  }
  return { ready: true, value: { values, versions } };
}

/** No timer: the Secret watch reconciles the object when the Secret appears or changes. */
function notReady(reason: string, message: string): Resolution<SecretValues> {
  return { ready: false, reason, message };
}

/** Whether any Secret read now is another version than the one last sent (recorded in status). */
export function secretsChanged(sent: Record<string, string> | undefined, now: SecretValues): boolean {
  return Object.entries(now.versions).some(([name, version]) => sent?.[name] !== version);
}

/** The value read for a spec path (present whenever `readSecretValues` was ready). */
export function secretValue(values: SecretValues, field: string): string {
  const value = values.values.get(field);
  if (value === undefined) throw new Error(`${field}: no Secret value was read for it`);
  return value;
}
