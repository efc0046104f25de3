import { randomBytes } from 'node:crypto';
import { KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  ownedSecretMetadata,
  ownedSecretsWatch,
} from '../../src/operator/controllers/shared/owned-secrets.js';
import {
  NAMED_SECRETS_WATCH,
  type SecretObject,
  secretReferences,
} from '../../src/operator/controllers/shared/secret-values.js';
import { LAST_APPLIED_ANNOTATION } from '../../src/operator/runtime/cache-transform.js';
import { KubeApi } from '../../src/operator/runtime/kube-api.js';
import { silentLogger } from '../../src/operator/runtime/logger.js';
import { Manager } from '../../src/operator/runtime/manager.js';
import { OperatorMetrics } from '../../src/operator/runtime/metrics.js';
import { ResourceClient } from '../../src/operator/runtime/resource-client.js';
import { CONFIG_MAP, SECRET } from '../../src/operator/runtime/resource-types.js';
import { ownersOf } from '../../src/operator/runtime/watch-mappers.js';
import { waitFor } from '../support/eventually.js';

/*
 * What the operator's Secret caches hold, against a real kube-apiserver, with the operator's own
 * watch specs (`NAMED_SECRETS_WATCH`, `ownedSecretsWatch`): a Secret a spec names is cached (with
 * its values) and its changes reconcile the object naming it; a Secret the operator wrote is cached
 * without its values and its changes reconcile its owner; a Secret nothing names is not cached.
 * The referrer here is a ConfigMap whose `data.secretName` names a Secret, standing in for a CR.
 */

const namespace = `edgeward-secret-cache-${randomBytes(3).toString('hex')}`;
type ConfigMap = KubernetesObject & { data?: Record<string, string> };

let kubeConfig: KubeConfig;
let configMaps: ResourceClient<ConfigMap>;
let secrets: ResourceClient<SecretObject>;
const cleanups: Array<() => Promise<unknown>> = [];

const secret = (name: string, value: string, metadata: KubernetesObject['metadata'] = {}): SecretObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { ...metadata, name, namespace },
  type: 'Opaque',
  data: { key: Buffer.from(value).toString('base64') },
});

async function eventually<T>(
  what: string,
  check: () => T | undefined | false,
  timeoutMs = 20_000,
): Promise<T> {
  return waitFor(check, { what, timeoutMs, intervalMs: 100 });
}

async function edit(name: string, value: string): Promise<void> {
  const current = await secrets.get(namespace, name);
  await secrets.replace({ ...current, data: { key: Buffer.from(value).toString('base64') } });
}

beforeAll(async () => {
  kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(inject('kubeconfig'));
  const api = new KubeApi(kubeConfig);
  configMaps = new ResourceClient<ConfigMap>(api, CONFIG_MAP);
  secrets = new ResourceClient<SecretObject>(api, SECRET);
  const namespaces = new ResourceClient(api, {
    group: '',
    version: 'v1',
    kind: 'Namespace',
    plural: 'namespaces',
    namespaced: false,
  });
  await namespaces.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  cleanups.push(() => namespaces.delete(undefined, namespace));
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

describe('Secret caches', () => {
  it('hold the Secrets specs name and the operator wrote, trimmed, and not the others', async () => {
    const referrer = await configMaps.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'referrer', namespace },
      data: { secretName: 'named' },
    });
    await secrets.create(
      secret('named', 'v1', { annotations: { [LAST_APPLIED_ANNOTATION]: '{"kind":"Secret"}', kept: 'yes' } }),
    );
    await secrets.create(secret('unrelated', 'nobody names me'));
    await secrets.create(secret('later', 'named after the start'));
    await secrets.create(secret('owned', 'token', ownedSecretMetadata(referrer, CONFIG_MAP, {})));

    const manager = new Manager({
      kubeConfig,
      namespaces: [namespace],
      leaderElection: false,
      log: silentLogger,
      metrics: new OperatorMetrics({ processMetrics: false }),
    });
    const owned = ownedSecretsWatch(ownersOf(CONFIG_MAP));
    const reconciled: string[] = [];
    manager.register<ConfigMap>({
      kind: CONFIG_MAP,
      references: (object) => {
        const name = object.data?.secretName;
        return name ? secretReferences([{ field: 'data.secretName', ref: { name, key: 'key' } }]) : [];
      },
      watches: [NAMED_SECRETS_WATCH, owned],
      async reconcile({ key }) {
        reconciled.push(key);
      },
    });
    const named = manager.informer<SecretObject>(SECRET, NAMED_SECRETS_WATCH.selectors);
    const ownedCache = manager.informer<SecretObject>(SECRET, {
      ...owned.selectors,
      transform: owned.transform,
    });
    // Sharing an informer with another transform would hand one user objects it cannot read.
    expect(() => manager.informer(SECRET, owned.selectors)).toThrow(/another transform/);
    await manager.start();
    try {
      const keys = () => named.cache.keys().sort();
      // Named before the start: cached at the first list, values and other annotations kept.
      expect(keys()).toEqual([`${namespace}/named`]);
      const cachedNamed = named.cache.get(namespace, 'named');
      expect(cachedNamed?.data?.key).toBe(Buffer.from('v1').toString('base64'));
      expect(cachedNamed?.metadata?.managedFields).toBeUndefined();
      expect(cachedNamed?.metadata?.annotations).toEqual({ kept: 'yes' });
      // The operator's own: cached (its label), without its values.
      expect(ownedCache.cache.keys()).toEqual([`${namespace}/owned`]);
      expect(ownedCache.cache.get(namespace, 'owned')?.data).toBeUndefined();
      expect(ownedCache.cache.get(namespace, 'owned')?.metadata?.ownerReferences?.[0]?.name).toBe('referrer');

      const referrerKey = `${namespace}/referrer`;
      const reconciles = () => reconciled.filter((key) => key === referrerKey).length;
      await eventually('the first reconcile', () => reconciles() > 0);

      // A named Secret changes: its referrer reconciles, and the cache has the new value.
      let before = reconciles();
      await edit('named', 'v2');
      await eventually('a reconcile after the named Secret changed', () => reconciles() > before);
      expect(named.cache.get(namespace, 'named')?.data?.key).toBe(Buffer.from('v2').toString('base64'));

      // The operator's Secret changes: its owner reconciles.
      before = reconciles();
      await edit('owned', 'edited');
      await eventually('a reconcile after the owned Secret changed', () => reconciles() > before);

      // An unrelated Secret changes: never cached (nothing to reconcile either).
      await edit('unrelated', 'changed');
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(keys()).toEqual([`${namespace}/named`]);

      // Named only now: cached from its next change, which reconciles the referrer.
      before = reconciles();
      const current = await configMaps.get(namespace, 'referrer');
      await configMaps.replace({ ...current, data: { secretName: 'later' } });
      await eventually('a reconcile after the referrer names later', () => reconciles() > before);
      expect(keys()).not.toContain(`${namespace}/later`);
      before = reconciles();
      await edit('later', 'changed');
      await eventually('later cached', () => named.cache.get(namespace, 'later'));
      await eventually('a reconcile after later changed', () => reconciles() > before);
      expect(keys()).toContain(`${namespace}/later`);
      expect(keys()).not.toContain(`${namespace}/unrelated`);

      // Deleting a named Secret reconciles its referrer.
      before = reconciles();
      await secrets.delete(namespace, 'later');
      await eventually('a reconcile after later was deleted', () => reconciles() > before);
      expect(keys()).not.toContain(`${namespace}/later`);
    } finally {
      await manager.stop();
    }
  });
});
