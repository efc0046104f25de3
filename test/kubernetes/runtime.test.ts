import { randomBytes } from 'node:crypto';
import { KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type Condition, getCondition, setCondition } from '../../src/operator/runtime/conditions.js';
import { type CoreEvent, EventRecorder } from '../../src/operator/runtime/events.js';
import { addFinalizer, FINALIZER, removeFinalizer } from '../../src/operator/runtime/finalizers.js';
import { Informer } from '../../src/operator/runtime/informer.js';
import { KubeApi } from '../../src/operator/runtime/kube-api.js';
import { LeaderElector, type Lease } from '../../src/operator/runtime/leader-election.js';
import { kubeListWatch, type ListWatchSource } from '../../src/operator/runtime/list-watch.js';
import { silentLogger } from '../../src/operator/runtime/logger.js';
import { Manager } from '../../src/operator/runtime/manager.js';
import { OperatorMetrics } from '../../src/operator/runtime/metrics.js';
import { ResourceClient } from '../../src/operator/runtime/resource-client.js';
import { CONFIG_MAP, EVENT, LEASE, type ResourceKind } from '../../src/operator/runtime/resource-types.js';
import { StatusWriter } from '../../src/operator/runtime/status-writer.js';
import { waitFor } from '../support/eventually.js';
import { tool } from '../support/kubectl.js';

/*
 * The operator runtime against a real kube-apiserver and etcd. A fresh CRD group per run gives a
 * kind whose watch cache starts now, which makes a watch from resourceVersion 1 fail with a real
 * 410 Gone ("too old resource version").
 */

const suffix = randomBytes(3).toString('hex');
const namespace = `edgeward-runtime-${suffix}`;
const otherNamespace = `edgeward-runtime-other-${suffix}`;
const GADGET: ResourceKind = {
  group: `rt${suffix}.edgeward.dev`,
  version: 'v1',
  kind: 'Gadget',
  plural: 'gadgets',
};
const GADGET_CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.${GADGET.group}
spec:
  group: ${GADGET.group}
  scope: Namespaced
  names: { plural: gadgets, singular: gadget, kind: Gadget }
  versions:
    - name: v1
      served: true
      storage: true
      subresources: { status: {} }
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: { type: integer }
                configMapRef: { type: string }
            status:
              type: object
              x-kubernetes-preserve-unknown-fields: true
`;

type ConfigMap = KubernetesObject & { data?: Record<string, string> };
type Gadget = KubernetesObject & {
  spec: { size: number; configMapRef?: string };
  status?: { conditions?: Condition[]; configValue?: string; writes?: number };
};

let kubeconfigPath: string;
let kubeConfig: KubeConfig;
let api: KubeApi;
let configMaps: ResourceClient<ConfigMap>;
let gadgets: ResourceClient<Gadget>;
const cleanups: Array<() => Promise<unknown>> = [];

const gadget = (name: string, spec: Gadget['spec']): Gadget => ({
  apiVersion: `${GADGET.group}/v1`,
  kind: 'Gadget',
  metadata: { name, namespace },
  spec,
});
const configMap = (name: string, data: Record<string, string>, at = namespace): ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: at },
  data,
});

/** Polls until `check` returns a value that is not undefined/false, or fails with `what`. */
async function eventually<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 20_000,
): Promise<T> {
  return waitFor(check, { what, timeoutMs, intervalMs: 100 });
}

beforeAll(async () => {
  kubeconfigPath = inject('kubeconfig');
  kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfigPath);
  api = new KubeApi(kubeConfig);
  configMaps = new ResourceClient<ConfigMap>(api, CONFIG_MAP);
  gadgets = new ResourceClient<Gadget>(api, GADGET);
  const namespaces = new ResourceClient(api, {
    group: '',
    version: 'v1',
    kind: 'Namespace',
    plural: 'namespaces',
    namespaced: false,
  });
  for (const name of [namespace, otherNamespace]) {
    await namespaces.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    cleanups.push(() => namespaces.delete(undefined, name));
  }
  await tool(inject('kubectl'), kubeconfigPath, ['apply', '-f', '-'], GADGET_CRD);
  cleanups.push(() => tool(inject('kubectl'), kubeconfigPath, ['delete', 'crd', `gadgets.${GADGET.group}`]));
  await tool(inject('kubectl'), kubeconfigPath, [
    'wait',
    '--for=condition=Established',
    `crd/gadgets.${GADGET.group}`,
    '--timeout=60s',
  ]);
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

describe('informer (real list+watch)', () => {
  it('sees add, update and delete of ConfigMaps in its namespace and keeps its cache right', async () => {
    await configMaps.create(configMap('before-start', { value: '0' }));
    const informer = new Informer<ConfigMap>({
      kind: CONFIG_MAP,
      source: kubeListWatch(api, CONFIG_MAP),
      namespaces: [namespace],
      log: silentLogger,
    });
    const events: string[] = [];
    informer.addHandlers({
      onAdd: (object) => events.push(`add ${object.metadata?.name}`),
      onUpdate: (previous, object) =>
        events.push(`update ${object.metadata?.name} ${previous.data?.value}->${object.data?.value}`),
      onDelete: (object) => events.push(`delete ${object.metadata?.name}`),
    });
    informer.start();
    try {
      await informer.waitForSync();
      expect(informer.hasSynced()).toBe(true);
      expect(informer.cache.get(namespace, 'before-start')?.data).toEqual({ value: '0' });
      expect(informer.cache.get(namespace, 'before-start')?.kind).toBe('ConfigMap');

      await configMaps.create(configMap('watched', { value: '1' }));
      await configMaps.create(configMap('elsewhere', { value: 'x' }, otherNamespace));
      await eventually('the add', () => informer.cache.get(namespace, 'watched'));
      const created = informer.cache.get(namespace, 'watched');
      await configMaps.replace({ ...created, data: { value: '2' } } as ConfigMap);
      await eventually('the update', () => informer.cache.get(namespace, 'watched')?.data?.value === '2');
      await configMaps.delete(namespace, 'watched');
      await eventually('the delete', () => informer.cache.get(namespace, 'watched') === undefined);

      expect(events).toEqual(['add before-start', 'add watched', 'update watched 1->2', 'delete watched']);
      // Only the namespace it was given (besides kube-root-ca.crt, which no controller publishes here).
      expect(informer.cache.list().every((object) => object.metadata?.namespace === namespace)).toBe(true);
      expect(informer.cache.get(otherNamespace, 'elsewhere')).toBeUndefined();
      const stored = (await configMaps.list(namespace)).items.map((object) => object.metadata?.name).sort();
      expect(
        informer.cache
          .list(namespace)
          .map((object) => object.metadata?.name)
          .sort(),
      ).toEqual(stored);
      expect(informer.stats.relistsAfterGone).toBe(0);
    } finally {
      await informer.stop();
    }
  });

  it('relists after a real 410 Gone and carries on watching', async () => {
    await gadgets.create(gadget('listed', { size: 1 }));
    const real = kubeListWatch<Gadget>(api, GADGET);
    const watchedFrom: string[] = [];
    let informer: Informer<Gadget> | undefined;
    // Watch from resourceVersion 1 until the server has answered 410 once: far older than this
    // kind's watch cache, so kube-apiserver sends an ERROR event with code 410 (Expired).
    const forcingGone: ListWatchSource<Gadget> = {
      list: (ns, options) => real.list(ns, options),
      watch: (ns, options, onEvent, onDone) => {
        const resourceVersion = informer?.stats.relistsAfterGone === 0 ? '1' : options.resourceVersion;
        watchedFrom.push(resourceVersion);
        return real.watch(ns, { ...options, resourceVersion }, onEvent, onDone);
      },
    };
    informer = new Informer<Gadget>({
      kind: GADGET,
      source: forcingGone,
      namespaces: [namespace],
      backoff: { initialMs: 200, maxMs: 1000 },
      log: silentLogger,
    });
    informer.start();
    try {
      await informer.waitForSync();
      await eventually('a relist after 410', () => informer?.stats.relistsAfterGone === 1);
      await eventually('the watch after the relist', () => watchedFrom.some((version) => version !== '1'));
      expect(informer.stats.lists).toBe(2);
      // 429s while the new CRD's watch cache warms up may come first; all watches before the
      // relist started from '1', every one after it from a real list resourceVersion.
      const firstReal = watchedFrom.findIndex((version) => version !== '1');
      expect(watchedFrom.slice(firstReal).every((version) => Number(version) > 1)).toBe(true);
      await gadgets.create(gadget('after-relist', { size: 2 }));
      await eventually('the object created after the relist', () =>
        informer?.cache.get(namespace, 'after-relist'),
      );
      expect(informer.cache.keys().sort()).toEqual([`${namespace}/after-relist`, `${namespace}/listed`]);
    } finally {
      await informer.stop();
    }
  });
});

describe('status writer', () => {
  it('writes status through the subresource, retrying a conflict on a fresh copy', async () => {
    const created = await gadgets.create(gadget('status', { size: 3 }));
    // Someone else changes the object after we read it: our copy is stale.
    await gadgets.patch(namespace, 'status', { metadata: { labels: { touched: 'yes' } } });
    const writer = new StatusWriter();
    const seen: string[] = [];
    const result = await writer.write(gadgets, created, (current) => {
      seen.push(current.metadata?.resourceVersion ?? '');
      return {
        writes: (current.status?.writes ?? 0) + 1,
        conditions: setCondition(
          current.status?.conditions,
          { type: 'Ready', status: 'True', reason: 'Reconciled', message: `size ${current.spec.size}` },
          { observedGeneration: current.metadata?.generation },
        ),
      };
    });
    expect(result.written).toBe(true);
    expect(result.attempts).toBe(2);
    expect(seen).toHaveLength(2);
    expect(seen[0]).toBe(created.metadata?.resourceVersion);
    expect(seen[1]).not.toBe(seen[0]);
    const stored = await gadgets.get(namespace, 'status');
    expect(stored.metadata?.labels).toEqual({ touched: 'yes' }); // the other writer's change survives
    expect(stored.status?.writes).toBe(1);
    expect(getCondition(stored.status?.conditions, 'Ready')).toMatchObject({
      status: 'True',
      reason: 'Reconciled',
      message: 'size 3',
      observedGeneration: 1,
    });
    expect(stored.metadata?.generation).toBe(1); // status writes never touch the spec

    // Computing the same status again writes nothing.
    const again = await writer.write(gadgets, stored, (current) => ({
      ...current.status,
      conditions: setCondition(
        current.status?.conditions,
        { type: 'Ready', status: 'True', reason: 'Reconciled', message: 'size 3' },
        { observedGeneration: current.metadata?.generation },
      ),
    }));
    expect(again).toMatchObject({ written: false, attempts: 0 });
    expect((await gadgets.get(namespace, 'status')).metadata?.resourceVersion).toBe(
      stored.metadata?.resourceVersion,
    );
  });
});

describe('finalizers', () => {
  it('adds and removes edgeward.dev/finalizer without losing concurrent changes', async () => {
    const created = await configMaps.create(configMap('finalized', { value: '1' }));
    const withOurs = await addFinalizer(configMaps, created);
    expect(withOurs.metadata?.finalizers).toEqual([FINALIZER]);
    // Adding again is a no-op without a request.
    expect(await addFinalizer(configMaps, withOurs)).toBe(withOurs);

    // Another controller adds its finalizer; our copy is stale when we remove ours.
    await configMaps.patch(namespace, 'finalized', [
      { op: 'add', path: '/metadata/finalizers/-', value: 'example.com/other' },
    ]);
    const removed = await removeFinalizer(configMaps, withOurs);
    expect(removed?.metadata?.finalizers).toEqual(['example.com/other']);

    // A stale add is retried on a fresh copy, keeping the other finalizer.
    const readded = await addFinalizer(configMaps, created);
    expect(readded.metadata?.finalizers).toEqual(['example.com/other', FINALIZER]);

    // Deleting waits for finalizers; removing the last one lets the object go.
    await configMaps.delete(namespace, 'finalized');
    const deleting = await configMaps.get(namespace, 'finalized');
    expect(deleting.metadata?.deletionTimestamp).toBeTruthy();
    // No new finalizers on an object being deleted: a clear error, not an endless retry.
    await expect(addFinalizer(configMaps, deleting, 'example.com/late')).rejects.toThrow(/rejected|failed/);
    const afterOurs = await removeFinalizer(configMaps, deleting);
    expect(afterOurs?.metadata?.finalizers).toEqual(['example.com/other']);
    expect(await removeFinalizer(configMaps, afterOurs as ConfigMap, 'example.com/other')).toBeUndefined();
    await expect(configMaps.get(namespace, 'finalized')).rejects.toMatchObject({ code: 404 });
  });
});

describe('events', () => {
  it('records Events on the object, aggregates identical ones and redacts secrets', async () => {
    const subject = await gadgets.create(gadget('eventful', { size: 1 }));
    const recorder = new EventRecorder({ api, component: 'edgeward-operator-test', instance: 'pod-1' });
    for (let round = 0; round < 3; round++) {
      await recorder.warning(subject, 'ApiError', 'creating the edge failed: token=tok_123 rejected');
    }
    await recorder.normal(subject, 'Created', 'created edgtls_1');
    await recorder.normal(subject, 'not camel', 'dropped');

    const events = new ResourceClient<CoreEvent>(api, EVENT);
    const listed = (
      await events.list(namespace, { fieldSelector: `involvedObject.uid=${subject.metadata?.uid}` })
    ).items.sort((a, b) => a.reason.localeCompare(b.reason));
    expect(listed.map((event) => [event.type, event.reason, event.count])).toEqual([
      ['Warning', 'ApiError', 3],
      ['Normal', 'Created', 1],
    ]);
    const [warning] = listed;
    expect(warning?.message).toBe('creating the edge failed: token=[REDACTED] rejected');
    expect(warning?.involvedObject).toMatchObject({
      apiVersion: `${GADGET.group}/v1`,
      kind: 'Gadget',
      name: 'eventful',
      namespace,
      uid: subject.metadata?.uid,
    });
    expect(warning?.source).toEqual({ component: 'edgeward-operator-test', host: 'pod-1' });
    expect(warning?.reportingComponent).toBe('edgeward-operator-test');
    expect(Date.parse(warning?.lastTimestamp ?? '')).toBeGreaterThanOrEqual(
      Date.parse(warning?.firstTimestamp ?? ''),
    );
  });
});

describe('manager', () => {
  it('reconciles through informers, the reference index and the status writer; serves probes and metrics', async () => {
    const manager = new Manager({
      kubeConfig,
      namespaces: [namespace],
      leaderElection: false,
      metricsAddress: '127.0.0.1:0',
      probeAddress: '127.0.0.1:0',
      log: silentLogger,
      metrics: new OperatorMetrics({ processMetrics: false }),
    });
    const client = manager.resources<Gadget>(GADGET);
    const settings = manager.informer<ConfigMap>(CONFIG_MAP);
    const reconciled: string[] = [];
    const registered = manager.register<Gadget>({
      kind: GADGET,
      references: (object) =>
        object.spec.configMapRef ? [{ kind: 'ConfigMap', name: object.spec.configMapRef }] : [],
      watches: [{ kind: CONFIG_MAP }],
      async reconcile({ key, namespace: ns, name }) {
        reconciled.push(key);
        const current = registered.informer.cache.get(ns, name);
        if (!current) return;
        const ref = current.spec.configMapRef;
        const value = ref ? settings.cache.get(ns, ref)?.data?.value : undefined;
        await manager.statusWriter.write(client, current, (fresh) => ({
          ...fresh.status,
          configValue: value ?? '',
          conditions: setCondition(
            fresh.status?.conditions,
            value === undefined
              ? {
                  type: 'Ready',
                  status: 'False',
                  reason: 'ConfigMissing',
                  message: `configMap ${ref} not found`,
                }
              : { type: 'Ready', status: 'True', reason: 'Reconciled' },
            { observedGeneration: fresh.metadata?.generation },
          ),
        }));
      },
    });
    await configMaps.create(configMap('settings', { value: 'v1' }));
    await manager.start();
    try {
      expect(manager.cachesSynced()).toBe(true);
      const [metricsUrl, probeUrl] = manager.serverUrls;
      await client.create(gadget('uses-settings', { size: 1, configMapRef: 'settings' }));
      const first = await eventually('status v1', async () => {
        const stored = await client.get(namespace, 'uses-settings');
        return stored.status?.configValue === 'v1' ? stored : undefined;
      });
      const ready = getCondition(first.status?.conditions, 'Ready');
      expect(ready).toMatchObject({ status: 'True', reason: 'Reconciled', observedGeneration: 1 });
      expect(registered.references?.referrersOf({ kind: 'ConfigMap', namespace, name: 'settings' })).toEqual([
        `${namespace}/uses-settings`,
      ]);

      // Only the ConfigMap changes: the reference index enqueues the Gadget that names it.
      const stored = await configMaps.get(namespace, 'settings');
      await configMaps.replace({ ...stored, data: { value: 'v2' } });
      const second = await eventually('status v2', async () => {
        const current = await client.get(namespace, 'uses-settings');
        return current.status?.configValue === 'v2' ? current : undefined;
      });
      expect(getCondition(second.status?.conditions, 'Ready')?.lastTransitionTime).toBe(
        ready?.lastTransitionTime,
      );

      // Our own status writes do not enqueue (status-only updates are filtered): it settles.
      const settled = reconciled.length;
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(reconciled.length).toBe(settled);

      const health = await fetch(`${probeUrl}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.text()).toContain('[+]ping ok');
      const readiness = await fetch(`${probeUrl}/readyz`);
      expect(readiness.status).toBe(200);
      expect(await readiness.text()).toContain('[+]informers-synced ok');
      expect((await fetch(`${probeUrl}/nothing`)).status).toBe(404);
      const metrics = await fetch(`${metricsUrl}/metrics`);
      expect(metrics.status).toBe(200);
      const text = await metrics.text();
      expect(text).toMatch(/edgeward_operator_reconcile_total\{kind="Gadget",result="success"\} [1-9]/);
      expect(text).toMatch(/edgeward_operator_reconcile_duration_seconds_count\{kind="Gadget"\} [1-9]/);
      expect(text).toMatch(
        /edgeward_operator_api_requests_total\{api="kubernetes",method="PUT",code="200"\} [1-9]/,
      );
      expect(text).toContain('edgeward_operator_workqueue_depth{kind="Gadget"} 0');
    } finally {
      await manager.stop();
    }
    expect(await manager.done).toBe('stopped');
    await expect(fetch(`${manager.serverUrls[1]}/healthz`)).rejects.toThrow();
  });

  it('runs as many reconciles at once per kind as --max-concurrent-reconciles says, never two of one key', async () => {
    const manager = new Manager({
      kubeConfig,
      namespaces: [namespace],
      leaderElection: false,
      log: silentLogger,
      metrics: new OperatorMetrics({ processMetrics: false }),
      concurrency: { default: 1, perKind: { Gadget: 3 } },
    });
    const client = manager.resources<Gadget>(GADGET);
    const names = Array.from({ length: 6 }, (_, i) => `parallel-${i}`);
    const inFlight = new Set<string>();
    let most = 0;
    let sameKeyTwice = false;
    const finished = new Set<string>();
    manager.register<Gadget>({
      kind: GADGET,
      async reconcile({ key, name }) {
        if (!names.includes(name)) return;
        if (inFlight.has(key)) sameKeyTwice = true;
        inFlight.add(key);
        most = Math.max(most, inFlight.size);
        await new Promise((resolve) => setTimeout(resolve, 300));
        inFlight.delete(key);
        finished.add(name);
      },
    });
    for (const name of names) await client.create(gadget(name, { size: 1 }));
    await manager.start();
    try {
      await eventually('all reconciled', async () => (finished.size === names.length ? true : undefined));
      expect(most).toBe(3);
      expect(sameKeyTwice).toBe(false);
    } finally {
      await manager.stop();
      for (const name of names) await client.delete(namespace, name);
    }
  });

  it('leader election: of two managers on one Lease only one works; the other takes over when it stops', async () => {
    const leaseName = 'runtime-test-leader';
    const work: Record<string, string[]> = { one: [], two: [] };
    const started: string[] = [];
    const make = (identity: 'one' | 'two') => {
      const manager = new Manager({
        kubeConfig,
        namespaces: [namespace],
        leaderElection: { namespace, name: leaseName, identity },
        probeAddress: '127.0.0.1:0',
        log: silentLogger,
        metrics: new OperatorMetrics({ processMetrics: false }),
        shutdownTimeoutMs: 10_000,
      });
      manager.register<ConfigMap>({
        kind: CONFIG_MAP,
        async reconcile({ name }) {
          if (name.startsWith('le-')) {
            started.push(name);
            // Long enough that stop() has a reconcile in flight to drain.
            await new Promise((resolve) => setTimeout(resolve, 1000));
            work[identity]?.push(name);
          }
        },
      });
      return manager;
    };
    const one = make('one');
    const two = make('two');
    await Promise.all([one.start(), two.start()]);
    try {
      await eventually('a leader', () => one.isLeader || two.isLeader);
      // Never two leaders: sample for a while.
      for (let sample = 0; sample < 20; sample++) {
        expect(one.isLeader && two.isLeader).toBe(false);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const [leader, standby, leaderName, standbyName] = one.isLeader
        ? [one, two, 'one', 'two']
        : [two, one, 'two', 'one'];
      const leases = new ResourceClient<Lease>(api, LEASE);
      const lease = await leases.get(namespace, leaseName);
      expect(lease.spec?.holderIdentity).toBe(leaderName);
      expect(lease.spec?.leaseDurationSeconds).toBe(15);
      // A standby is ready too (its caches are warm), so a rollout is not blocked.
      for (const url of [leader.serverUrls[0], standby.serverUrls[0]]) {
        expect((await fetch(`${url}/readyz`)).status).toBe(200);
      }

      await configMaps.create(configMap('le-first', { value: '1' }));
      await eventually('the leader reconciling', () => work[leaderName]?.includes('le-first'));
      expect(work[standbyName]).toEqual([]);

      await configMaps.create(configMap('le-during-stop', { value: '1' }));
      await eventually('a reconcile in flight', () => started.includes('le-during-stop'));
      await leader.stop(); // drains, then releases the Lease
      // The reconcile in flight was allowed to finish.
      expect(work[leaderName]).toContain('le-during-stop');
      // A released Lease is taken at the standby's next retry, not after the lease duration.
      await eventually('the standby taking over', () => standby.isLeader, 60_000);
      const taken = await leases.get(namespace, leaseName);
      expect(taken.spec?.holderIdentity).toBe(standbyName);
      expect(taken.spec?.leaseTransitions).toBe((lease.spec?.leaseTransitions ?? 0) + 1);

      await configMaps.create(configMap('le-second', { value: '1' }));
      await eventually('the new leader reconciling', () => work[standbyName]?.includes('le-second'));
      expect(work[leaderName]).not.toContain('le-second');
      // Every object was handled by one of them; the old leader finished what it had started.
      expect([...(work.one ?? []), ...(work.two ?? [])]).toEqual(
        expect.arrayContaining(['le-first', 'le-during-stop', 'le-second']),
      );
    } finally {
      await Promise.all([one.stop(), two.stop()]);
    }
  });

  it('everyReplica: a standby reconciles too (not leading), and reads the replica report of the other', async () => {
    const leaseName = 'runtime-test-every';
    const seen: Record<string, Array<{ name: string; leading: boolean }>> = { one: [], two: [] };
    const peerChanges: Record<string, string[]> = { one: [], two: [] };
    const managers = (['one', 'two'] as const).map((identity) => {
      const manager = new Manager({
        kubeConfig,
        namespaces: [namespace],
        leaderElection: {
          namespace,
          name: leaseName,
          identity,
          leaseDurationMs: 3000,
          renewDeadlineMs: 2000,
          retryPeriodMs: 500,
        },
        log: silentLogger,
        metrics: new OperatorMetrics({ processMetrics: false }),
      });
      // Each replica reports the ConfigMaps it reconciled, as a Tunnel's replica reports its sessions.
      const reconciled: Record<string, string[]> = {};
      const report = manager.replicaReport(() => reconciled);
      report?.onPeerChange((keys) => peerChanges[identity]?.push(...keys));
      manager.register<ConfigMap>({
        kind: CONFIG_MAP,
        everyReplica: true,
        async reconcile({ key, name }, { leading }) {
          if (!name.startsWith('every-')) return;
          seen[identity]?.push({ name, leading });
          reconciled[key] = [identity];
          report?.changed();
        },
      });
      return { manager, report };
    });
    const [one, two] = managers as [(typeof managers)[0], (typeof managers)[0]];
    await Promise.all([one.manager.start(), two.manager.start()]);
    try {
      await eventually('a leader', () => one.manager.isLeader || two.manager.isLeader);
      const [leader, standby] = one.manager.isLeader ? ['one', 'two'] : ['two', 'one'];
      await configMaps.create(configMap('every-1', { value: '1' }));
      await eventually('both replicas reconciling', () =>
        (['one', 'two'] as const).every((id) => seen[id]?.some((call) => call.name === 'every-1')),
      );
      expect(seen[standby]?.every((call) => !call.leading)).toBe(true);
      expect(seen[leader]?.at(-1)?.leading).toBe(true);
      // Each reads the other's report, not its own, from a Lease that replica writes.
      const key = `${namespace}/every-1`;
      await eventually('the reports crossing', () => {
        const [fromTwo, fromOne] = [one.report?.peerValues(key), two.report?.peerValues(key)];
        return fromTwo?.[0] === 'two' && fromOne?.[0] === 'one';
      });
      expect(peerChanges.one).toContain(key);
      const reports = await new ResourceClient<Lease>(api, LEASE).list(namespace, {
        labelSelector: `edgeward.dev/replica-report-of=${leaseName}`,
      });
      expect(reports.items.map((lease) => lease.spec?.holderIdentity).sort()).toEqual(['one', 'two']);

      // A stopped replica deletes its report: the other hears it at once, not after a lease duration.
      const [stopping, staying] = leader === 'one' ? [one, two] : [two, one];
      await stopping.manager.stop();
      await eventually('the stopped replica’s report gone', () =>
        staying.report?.peerValues(key).length === 0 ? true : undefined,
      );
      // The standby takes over, and its workers reconcile the key again, now as the leader.
      await eventually('the standby leading', () => staying.manager.isLeader, 30_000);
      await eventually('a reconcile as the leader', () =>
        seen[standby]?.some((call) => call.name === 'every-1' && call.leading),
      );
    } finally {
      await Promise.all([one.manager.stop(), two.manager.stop()]);
      await configMaps.delete(namespace, 'every-1').catch(() => undefined);
    }
  });

  it('leader election: a leader that dies without releasing is replaced after the lease expires', async () => {
    const leaseName = 'runtime-test-crash';
    const first = new LeaderElector({ api, namespace, name: leaseName, identity: 'first' });
    const second = new LeaderElector({ api, namespace, name: leaseName, identity: 'second' });
    first.run();
    await eventually('the first leading', () => first.isLeader);
    second.run();
    try {
      await new Promise((resolve) => setTimeout(resolve, 3000));
      expect(second.isLeader).toBe(false);
      expect(second.observedLeader).toBe('first');
      await first.stop({ release: false }); // a crash: renewals just stop
      // The lease is not yet expired a moment later, so the standby must not grab it.
      await new Promise((resolve) => setTimeout(resolve, 2000));
      expect(second.isLeader).toBe(false);
      // Once the 15 s lease runs out unrenewed, the standby takes over (no timing is asserted).
      await eventually('the second leading', () => second.isLeader, 60_000);
      const lease = await new ResourceClient<Lease>(api, LEASE).get(namespace, leaseName);
      expect(lease.spec?.holderIdentity).toBe('second');
      expect(lease.spec?.leaseTransitions).toBe(1);
    } finally {
      await Promise.all([first.stop(), second.stop()]);
    }
  });
});
