import { randomBytes } from 'node:crypto';
import type { KubeApi } from '../runtime/kube-api.js';
import { describeKubeError, isConflict, isKubeNotFound } from '../runtime/kube-errors.js';

const HELM_RELEASE_ANNOTATION = 'meta.helm.sh/release-name';
const HELM_POLICY_ANNOTATION = 'helm.sh/resource-policy';

/** A key the chart needs and nobody gave it: Secret `name`, data key `key`, value `<prefix><random>`. */
export interface GeneratedKey {
  name: string;
  key: string;
  prefix: string;
}

export type KeyOutcome = 'created' | 'added' | 'kept';

/**
 * Material made of several data keys that only make sense together (a certificate and its private
 * key): generated whole when any of `keys` is missing, never changed once all are there.
 */
export interface GeneratedMaterial {
  name: string;
  /** Secret type when this creates the Secret (e.g. kubernetes.io/tls). */
  type: string;
  keys: string[];
  /** The data keys' values, in plain text. */
  generate: () => Promise<Record<string, string>>;
}

interface SecretObject {
  metadata: {
    name: string;
    namespace: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  type?: string;
  data?: Record<string, string>;
}

/**
 * Makes each key exist exactly once: a missing Secret is created, a Secret without the key gets
 * it, a key already there is never changed (so reinstalls and upgrades keep working keys). Run
 * outside the chart's templates (a pre-install/pre-upgrade hook Job), so `helm template` renders
 * the same output every time, as Argo CD needs. Safe to race: a create that loses gets 409 and
 * the update carries the resourceVersion it read, so both racers end with the winner's value.
 */
export async function ensureGeneratedKeys(
  kube: KubeApi,
  namespace: string,
  keys: GeneratedKey[],
  labels: Record<string, string>,
): Promise<Array<GeneratedKey & { outcome: KeyOutcome }>> {
  const outcomes: Array<GeneratedKey & { outcome: KeyOutcome }> = [];
  for (const key of keys) {
    const material: GeneratedMaterial = {
      name: key.name,
      type: 'Opaque',
      keys: [key.key],
      // 256 random bits, as the server's own tokens.
      generate: async () => ({ [key.key]: `${key.prefix}${randomBytes(32).toString('base64url')}` }),
    };
    outcomes.push({ ...key, outcome: await ensureMaterial(kube, namespace, material, labels) });
  }
  return outcomes;
}

/** The same guarantees as ensureGeneratedKeys, for multi-key material (see GeneratedMaterial). */
export async function ensureGeneratedMaterial(
  kube: KubeApi,
  namespace: string,
  materials: GeneratedMaterial[],
  labels: Record<string, string>,
): Promise<Array<{ name: string; keys: string[]; outcome: KeyOutcome }>> {
  const outcomes: Array<{ name: string; keys: string[]; outcome: KeyOutcome }> = [];
  for (const material of materials) {
    const outcome = await ensureMaterial(kube, namespace, material, labels);
    outcomes.push({ name: material.name, keys: material.keys, outcome });
  }
  return outcomes;
}

async function ensureMaterial(
  kube: KubeApi,
  namespace: string,
  { name, type, keys, generate }: GeneratedMaterial,
  labels: Record<string, string>,
): Promise<KeyOutcome> {
  const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`;
  const key = keys.join(',');
  const value = async () =>
    Object.fromEntries(
      Object.entries(await generate()).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    );
  for (let attempt = 1; ; attempt++) {
    try {
      const existing = await readSecret(kube, `${path}/${encodeURIComponent(name)}`);
      if (!existing) {
        const secret: SecretObject = {
          metadata: { name, namespace, labels },
          type,
          data: await value(),
        };
        await kube.request('POST', path, { body: { apiVersion: 'v1', kind: 'Secret', ...secret } });
        return 'created';
      }
      const annotations = existing.metadata.annotations ?? {};
      // A Secret an earlier chart rendered is a release object: the upgrade that stops rendering it
      // would delete it (and the key with it) unless Helm is told to keep it.
      const keep =
        annotations[HELM_RELEASE_ANNOTATION] !== undefined && annotations[HELM_POLICY_ANNOTATION] !== 'keep';
      // All or nothing: a certificate whose key is gone is useless, so both are made again.
      const has = keys.every((k) => Boolean(existing.data?.[k]));
      if (has && !keep) return 'kept';
      // resourceVersion in the body: a concurrent writer makes this a 409, and the loop reads again.
      const updated: SecretObject = {
        ...existing,
        metadata: keep
          ? { ...existing.metadata, annotations: { ...annotations, [HELM_POLICY_ANNOTATION]: 'keep' } }
          : existing.metadata,
        data: has ? existing.data : { ...existing.data, ...(await value()) },
      };
      await kube.request('PUT', `${path}/${encodeURIComponent(name)}`, { body: updated });
      return has ? 'kept' : 'added';
    } catch (error) {
      if (isConflict(error) && attempt < 5) continue;
      throw new Error(`ensuring key ${key} of Secret ${namespace}/${name}: ${describeKubeError(error)}`, {
        cause: error,
      });
    }
  }
}

async function readSecret(kube: KubeApi, path: string): Promise<SecretObject | undefined> {
  try {
    return await kube.request<SecretObject>('GET', path);
  } catch (error) {
    if (isKubeNotFound(error)) return undefined;
    throw error;
  }
}
