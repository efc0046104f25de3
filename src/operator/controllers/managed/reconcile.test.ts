import { describe, expect, it } from 'vitest';
import { FakeInformer } from '../../../../test/support/fake/informer.js';
import { FakeResourceClient } from '../../../../test/support/fake/resource-client.js';
import { EdgewardApiError, EdgewardTransportError } from '../../../client/errors.js';
import type { ReconcileContext } from '../../runtime/controller.js';
import type { EventReporter } from '../../runtime/events.js';
import { createLogger, silentLogger } from '../../runtime/logger.js';
import { sameJson } from '../../runtime/same-json.js';
import { StatusWriter } from '../../runtime/status-writer.js';
import { CreateMemory } from './create-memory.js';
import type { ManagedController } from './managed-controller.js';
import type {
  ExtraConditions,
  ManagedObject,
  RemoteResource,
  Replacement,
  ResourceSync,
} from './managed-resource.js';
import { reconcileManaged } from './reconcile.js';
import { SyncProgressError } from './sync-errors.js';

type Thing = ManagedObject & { spec: { name: string; deletionPolicy?: 'Delete' | 'Orphan' } };
type RemoteThing = RemoteResource & { name: string };

const KIND = { group: 'edgeward.dev', version: 'v1alpha1', kind: 'Thing', plural: 'things' };
const context: ReconcileContext = {
  signal: new AbortController().signal,
  log: silentLogger,
  failures: 0,
  leading: true,
};
const request = { key: 'ns/a', namespace: 'ns', name: 'a' };

/** The server's 409 for a key reused with another body, naming the resource the key made. */
function keyReused(resourceId: string): EdgewardApiError {
  return new EdgewardApiError({
    method: 'POST',
    path: '/things',
    statusCode: 409,
    errorCode: 'ERR_EDGEWARD_500',
    msg: `Idempotency-Key: already used with a different request, which made ${resourceId}`,
    operationId: undefined,
    resourceId,
  });
}

function apiError(statusCode: number, retryAfterMs?: number): EdgewardApiError {
  return new EdgewardApiError({
    method: 'POST',
    path: '/things',
    statusCode,
    errorCode: 'ERR_EW_100',
    msg: 'name: bad',
    operationId: undefined,
    retryAfterMs,
  });
}

/** A fake cluster (object store and informer) and server: records every Kubernetes and API write. */
function harness(
  initial: Partial<Thing> & { spec: Thing['spec'] },
  resolve: ResourceSync<Thing, undefined, RemoteThing>['resolve'] = async () => ({
    ready: true,
    value: undefined,
  }),
) {
  const client = new FakeResourceClient<Thing>(KIND, [
    {
      apiVersion: 'edgeward.dev/v1alpha1',
      kind: 'Thing',
      ...initial,
      metadata: {
        name: 'a',
        namespace: 'ns',
        uid: 'uid-1',
        generation: 3,
        resourceVersion: '1',
        ...initial.metadata,
      },
    },
  ]);
  /** The informer cache follows the store; `cacheShows` makes it show a stale object. */
  const informer = FakeInformer.following(client);
  const stored = (): Thing => {
    const object = client.stored('ns', 'a');
    if (!object) throw new Error('the Thing is not stored');
    return object;
  };
  const kube: string[] = [];
  const api: string[] = [];
  const events: string[] = [];
  const server = new Map<string, RemoteThing>();
  let beforeNextStatusWrite: ((current: Thing) => Thing) | undefined;
  client.intercept('patch', ({ patch }) => {
    if (Array.isArray(patch)) kube.push(`patch ${patch.map((op) => op.op).join(',')}`);
    else kube.push(`patch ${JSON.stringify(patch)}`);
  });
  client.intercept('replaceStatus', async () => {
    kube.push('status');
    if (beforeNextStatusWrite) {
      // Someone else writes first (e.g. a spec edit): this write then conflicts, as the apiserver's would.
      const change = beforeNextStatusWrite;
      beforeNextStatusWrite = undefined;
      await client.replace(change(stored()));
    }
  });
  // Like the server: a key seen with the same body replays its answer; with another body it is
  // refused, naming what it made.
  const createdByKey = new Map<string, { body: unknown; created: RemoteThing }>();
  let createdCount = 0;
  let failCreate: Error | undefined;
  let loseNextCreateAnswer = false;
  let replaceBecause: string | Replacement | undefined;
  const sync: ResourceSync<Thing, undefined, RemoteThing> = {
    resolve,
    async get(id) {
      api.push(`GET ${id}`);
      const found = server.get(id);
      if (!found) throw Object.assign(apiError(404));
      return found;
    },
    async create(object, _resolved, options) {
      const body = { name: object.spec.name };
      const key = options.idempotencyKey;
      api.push(`POST key=${key}`);
      if (failCreate) throw failCreate;
      const made = createdByKey.get(key);
      if (made && sameJson(made.body, body)) return made.created;
      if (made) throw keyReused(made.created.id);
      createdCount += 1;
      const id = `thg_${createdCount}`;
      const created = { id, uri: `/things/${id}`, name: object.spec.name };
      server.set(created.id, created);
      createdByKey.set(key, { body, created });
      if (loseNextCreateAnswer) {
        loseNextCreateAnswer = false;
        throw new EdgewardTransportError('POST', '/things', new Error('socket hang up'));
      }
      return created;
    },
    async update(object, _resolved, remote) {
      if (remote.name === object.spec.name) return { remote, changed: false };
      api.push(`PATCH ${remote.id}`);
      const updated = { ...remote, name: object.spec.name };
      server.set(remote.id, updated);
      return { remote: updated, changed: true };
    },
    async delete(id) {
      api.push(`DELETE ${id}`);
      if (!server.delete(id)) throw apiError(404);
    },
    needsReplacement: () => replaceBecause,
  };
  const reporter: EventReporter = {
    async normal(_object, reason) {
      events.push(`Normal ${reason}`);
    },
    async warning(_object, reason) {
      events.push(`Warning ${reason}`);
    },
  };
  const controller: ManagedController<Thing, undefined, RemoteThing> = {
    client,
    informer,
    sync,
    statusWriter: new StatusWriter(),
    events: reporter,
    memory: new CreateMemory<Thing, undefined>(),
  };
  return {
    reconcile: () => reconcileManaged(controller, request, context),
    reconcileWith: (custom: ReconcileContext) => reconcileManaged(controller, request, custom),
    get object() {
      return stored();
    },
    set object(next: Thing) {
      client.put(next);
    },
    kube,
    api,
    events,
    server,
    failCreateWith(error: Error | undefined) {
      failCreate = error;
    },
    /** A new process: what this one remembered of unanswered creates is gone. */
    restart() {
      controller.memory = new CreateMemory<Thing, undefined>();
    },
    /** The next create is made on the server but its answer never arrives. */
    loseNextCreateAnswer() {
      loseNextCreateAnswer = true;
    },
    /** Makes the informer cache show `view` (stale) instead of the stored object. */
    cacheShows(view: Thing) {
      informer.put(view);
    },
    /** The next status write conflicts after `change` is applied to the stored object. */
    conflictOnNextStatusWrite(change: (current: Thing) => Thing) {
      beforeNextStatusWrite = change;
    },
    failAfterCreateWith(error: Error) {
      sync.afterCreate = async () => {
        throw error;
      };
    },
    orphanRecords() {
      sync.orphan = async () => {
        api.push('ORPHAN');
      };
    },
    replaceBecause(reason: string | Replacement | undefined) {
      replaceBecause = reason;
    },
    /** Gives the sync extra conditions: `report` answers each read (throwing = the read failed). */
    reportConditions(report: (remote: RemoteThing) => ExtraConditions) {
      sync.extraConditions = async (_object, remote) => {
        api.push(`GET ${remote.id}/health`);
        return report(remote);
      };
    },
    /** Gives the sync something it keeps besides the resource, deleted by `deleteKept`. */
    keepSomething() {
      sync.deleteKept = async () => {
        api.push('DELETE kept');
      };
    },
  };
}

/** The merge patch that mirrors status.id (thg_1) into the external-id annotation. */
const MIRROR_THG_1 = `patch ${JSON.stringify({ metadata: { annotations: { 'edgeward.dev/external-id': 'thg_1' } } })}`;

const ready = (object: Thing) => object.status?.conditions?.find((c) => c.type === 'Ready');
const healthy = (object: Thing) => object.status?.conditions?.find((c) => c.type === 'Healthy');
const health = (status: 'True' | 'False', message: string, requeueAfterMs?: number): ExtraConditions => ({
  conditions: [{ type: 'Healthy', status, reason: status === 'True' ? 'Fine' : 'Broken', message }],
  ...(requeueAfterMs === undefined ? {} : { requeueAfterMs }),
});

describe('reconcileManaged', () => {
  it('adds the finalizer before the create, creates with the uid as its Idempotency-Key, writes status once, mirrors the id', async () => {
    const h = harness({ spec: { name: 'one' } });
    await h.reconcile();
    expect(h.kube).toEqual(['patch test,add', 'status', MIRROR_THG_1]);
    expect(h.object.metadata?.annotations).toEqual({ 'edgeward.dev/external-id': 'thg_1' });
    expect(h.api).toEqual(['POST key=uid-1']);
    expect(h.events).toEqual(['Normal Created']);
    expect(h.object.metadata?.finalizers).toEqual(['edgeward.dev/finalizer']);
    expect(h.object.status).toMatchObject({ id: 'thg_1', uri: '/things/thg_1', observedGeneration: 3 });
    expect(ready(h.object)).toMatchObject({ status: 'True', reason: 'Created', observedGeneration: 3 });
  });

  it('finds its resource again through the external-id when status was lost (a restore): no second create', async () => {
    const h = harness({ spec: { name: 'one' } });
    await h.reconcile();
    // Restored from a backup: a new uid, no status, the annotations kept.
    const { status: _lost, ...restored } = h.object;
    h.object = { ...restored, metadata: { ...restored.metadata, uid: 'uid-2' } };
    await h.reconcile();
    expect(h.api).toEqual(['POST key=uid-1', 'GET thg_1']);
    expect(h.object.status?.id).toBe('thg_1');
    expect(ready(h.object)).toMatchObject({ status: 'True', reason: 'Recovered' });
    expect(h.events).toEqual(['Normal Created', 'Normal Recovered']);
    // Gone from the server meanwhile: made again, under a key that names the gone one.
    h.server.clear();
    const { status: _again, ...restoredAgain } = h.object;
    h.object = { ...restoredAgain, metadata: { ...restoredAgain.metadata, uid: 'uid-3' } };
    await h.reconcile();
    expect(h.api.slice(2)).toEqual(['GET thg_1', 'POST key=uid-3-replaces-thg_1']);
    expect(h.object.metadata?.annotations?.['edgeward.dev/external-id']).toBe('thg_2');
  });

  it('prefers an explicit adopt-id to the external-id when status is empty', async () => {
    const h = harness({
      spec: { name: 'one' },
      metadata: { annotations: { 'edgeward.dev/external-id': 'thg_9', 'edgeward.dev/adopt-id': 'thg_1' } },
    });
    h.server.set('thg_1', { id: 'thg_1', uri: '/things/thg_1', name: 'one' });
    await h.reconcile();
    expect(h.api).toEqual(['GET thg_1']);
    expect(ready(h.object)).toMatchObject({ reason: 'Adopted' });
    expect(h.object.metadata?.annotations?.['edgeward.dev/external-id']).toBe('thg_1');
  });

  it('makes no write at all when nothing changed', async () => {
    const h = harness({ spec: { name: 'one' } });
    await h.reconcile();
    h.kube.length = 0;
    h.api.length = 0;
    await h.reconcile();
    expect(h.api).toEqual(['GET thg_1']);
    // Ready keeps its reason (Created): a reconcile that finds no drift writes no status either.
    expect(h.kube).toEqual([]);
    expect(ready(h.object)).toMatchObject({ status: 'True', reason: 'Created' });
  });

  it('patches a changed spec and recreates a resource deleted on the server with a new key', async () => {
    const h = harness({ spec: { name: 'one' } });
    await h.reconcile();
    h.object = { ...h.object, spec: { name: 'two' }, metadata: { ...h.object.metadata, generation: 4 } };
    await h.reconcile();
    expect(h.api.slice(-2)).toEqual(['GET thg_1', 'PATCH thg_1']);
    expect(h.server.get('thg_1')?.name).toBe('two');
    h.server.clear();
    await h.reconcile();
    expect(h.api.at(-1)).toBe('POST key=uid-1-replaces-thg_1');
  });

  it('does nothing but report Paused while the paused annotation is set', async () => {
    const h = harness({
      spec: { name: 'one' },
      metadata: { annotations: { 'edgeward.dev/paused': 'true' } },
    });
    await h.reconcile();
    expect(h.api).toEqual([]);
    expect(h.object.metadata?.finalizers).toBeUndefined();
    expect(h.object.status?.conditions?.find((c) => c.type === 'Synced')).toMatchObject({
      status: 'False',
      reason: 'Paused',
    });
  });

  it('reports a 400 as InvalidSpec with a Warning and does not retry the same generation', async () => {
    const h = harness({ spec: { name: 'one' } });
    h.failCreateWith(apiError(400));
    await expect(h.reconcile()).resolves.toBeUndefined();
    expect(ready(h.object)).toMatchObject({ status: 'False', reason: 'InvalidSpec', observedGeneration: 3 });
    expect(h.events).toEqual(['Warning InvalidSpec']);
    await h.reconcile();
    expect(h.api).toEqual(['POST key=uid-1']);
  });

  it('reports 5xx and transport errors as ApiUnavailable and rethrows them for backoff', async () => {
    for (const error of [
      apiError(503),
      new EdgewardTransportError('POST', '/things', new Error('refused')),
    ]) {
      const h = harness({ spec: { name: 'one' } });
      h.failCreateWith(error);
      await expect(h.reconcile()).rejects.toBe(error);
      expect(ready(h.object)).toMatchObject({ status: 'False', reason: 'ApiUnavailable' });
    }
  });

  it('reports a 429 as RateLimited with its Retry-After, and rethrows it for backoff', async () => {
    const limited = apiError(429, 12_400);
    const h = harness({ spec: { name: 'one' } });
    h.failCreateWith(limited);
    await expect(h.reconcile()).rejects.toBe(limited);
    expect(ready(h.object)).toMatchObject({
      status: 'False',
      reason: 'RateLimited',
      message: `${limited.message} (retrying after 13 s, the server's Retry-After)`,
    });
    const withoutHeader = harness({ spec: { name: 'one' } });
    withoutHeader.failCreateWith(apiError(429));
    await expect(withoutHeader.reconcile()).rejects.toBeInstanceOf(EdgewardApiError);
    expect(ready(withoutHeader.object)).toMatchObject({
      reason: 'RateLimited',
      message: apiError(429).message,
    });
  });

  it('deletes remotely (404 counts) then removes the finalizer; Orphan deletes nothing', async () => {
    for (const [policy, expected] of [
      ['Delete', ['DELETE thg_1']],
      ['Orphan', []],
    ] as const) {
      const h = harness({ spec: { name: 'one', deletionPolicy: policy } });
      await h.reconcile();
      h.api.length = 0;
      h.object = { ...h.object, metadata: { ...h.object.metadata, deletionTimestamp: new Date() } };
      await h.reconcile();
      expect(h.api).toEqual(expected);
      expect(h.object.metadata?.finalizers).toEqual([]);
    }
    const gone = harness({ spec: { name: 'one' } });
    await gone.reconcile();
    gone.server.clear();
    gone.object = { ...gone.object, metadata: { ...gone.object.metadata, deletionTimestamp: new Date() } };
    await gone.reconcile();
    expect(gone.object.metadata?.finalizers).toEqual([]);
  });

  it('waits on unresolved references without any API call', async () => {
    const h = harness({ spec: { name: 'one' } }, async () => ({
      ready: false,
      reason: 'ReferenceNotReady',
      message: 'spec.ownerRef: BotUser b is not Ready',
    }));
    // No timer: the watch of the referenced kind enqueues this object when the reference is Ready.
    await expect(h.reconcile()).resolves.toBeUndefined();
    expect(h.api).toEqual([]);
    expect(ready(h.object)).toMatchObject({ status: 'False', reason: 'ReferenceNotReady' });
  });

  it('replaces a resource that needs it: create under the replaces-key, then delete the old one', async () => {
    const h = harness({ spec: { name: 'one' } });
    await h.reconcile();
    h.api.length = 0;
    h.events.length = 0;
    h.replaceBecause('the token Secret is gone');
    await h.reconcile();
    expect(h.api).toEqual(['GET thg_1', 'POST key=uid-1-replaces-thg_1', 'DELETE thg_1']);
    expect(h.events).toEqual(['Warning Replaced']);
    expect(h.object.status?.id).toBe('thg_2');
    expect(ready(h.object)).toMatchObject({ status: 'True', reason: 'Replaced' });
    expect([...h.server.keys()]).toEqual(['thg_2']);
  });

  it('announces a routine replacement (a renewed certificate) with a Normal event, not a Warning', async () => {
    const h = harness({ spec: { name: 'one' } });
    await h.reconcile();
    h.api.length = 0;
    h.events.length = 0;
    h.replaceBecause({ because: 'the Secret holds a renewed certificate', routine: true });
    await h.reconcile();
    expect(h.api).toEqual(['GET thg_1', 'POST key=uid-1-replaces-thg_1', 'DELETE thg_1']);
    expect(h.events).toEqual(['Normal Replaced']);
    expect(ready(h.object)).toMatchObject({ status: 'True', reason: 'Replaced' });
  });

  it('after a replacement, a cache still showing the old id neither recreates nor loses Replaced', async () => {
    const h = harness({ spec: { name: 'one' } });
    await h.reconcile();
    const beforeReplacement = h.object;
    h.replaceBecause('the token Secret is gone');
    await h.reconcile();
    h.replaceBecause(undefined);
    h.api.length = 0;
    h.kube.length = 0;
    // The Secret the replacement wrote queues the key again before the cache has the new status.id.
    h.cacheShows(beforeReplacement);
    await h.reconcile();
    expect(h.api).toEqual(['GET thg_1', 'GET thg_2']);
    expect(h.kube).toEqual([]);
    expect([...h.server.keys()]).toEqual(['thg_2']);
    expect(ready(h.object)).toMatchObject({ status: 'True', reason: 'Replaced' });
  });

  it('never replaces an adopted resource', async () => {
    const h = harness({
      spec: { name: 'one' },
      metadata: { annotations: { 'edgeward.dev/adopt-id': 'thg_9' } },
    });
    h.server.set('thg_9', { id: 'thg_9', uri: '/things/thg_9', name: 'one' });
    h.replaceBecause('would replace');
    await h.reconcile();
    expect(h.api).toEqual(['GET thg_9']);
    expect(ready(h.object)).toMatchObject({ status: 'True', reason: 'Adopted' });
  });

  it('writes the status fields a failed sync made progress on, and still classifies its cause', async () => {
    const h = harness({ spec: { name: 'one' } });
    h.failCreateWith(new SyncProgressError({ backendId: 'bkd_1' }, apiError(400)));
    await expect(h.reconcile()).resolves.toBeUndefined();
    expect(h.object.status?.backendId).toBe('bkd_1');
    expect(ready(h.object)).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    const retried = harness({ spec: { name: 'one' } });
    const unavailable = apiError(503);
    retried.failCreateWith(new SyncProgressError({ backendId: 'bkd_2' }, unavailable));
    await expect(retried.reconcile()).rejects.toThrow(unavailable.message);
    expect(retried.object.status?.backendId).toBe('bkd_2');
    expect(ready(retried.object)).toMatchObject({ status: 'False', reason: 'ApiUnavailable' });
  });

  it('deletes what it keeps with the CR, even when no resource was ever created', async () => {
    const h = harness({ spec: { name: 'one' } });
    h.keepSomething();
    h.failCreateWith(apiError(400));
    await h.reconcile();
    h.object = { ...h.object, metadata: { ...h.object.metadata, deletionTimestamp: new Date() } };
    await h.reconcile();
    expect(h.api).toEqual(['POST key=uid-1', 'DELETE kept']);
    expect(h.object.metadata?.finalizers).toEqual([]);
  });

  it('keeps retrying a delete the server refuses as still in use (409), saying DeleteBlocked', async () => {
    const h = harness({ spec: { name: 'one' } });
    await h.reconcile();
    h.object = { ...h.object, metadata: { ...h.object.metadata, deletionTimestamp: new Date() } };
    const inUse = apiError(409);
    const remove = h.server.delete.bind(h.server);
    h.server.delete = () => {
      throw inUse;
    };
    await expect(h.reconcile()).rejects.toBe(inUse);
    expect(ready(h.object)).toMatchObject({ status: 'False', reason: 'DeleteBlocked' });
    expect(h.object.metadata?.finalizers).toEqual(['edgeward.dev/finalizer']);
    h.server.delete = remove;
    await h.reconcile();
    expect(h.object.metadata?.finalizers).toEqual([]);
  });

  it('reads the object live when the cache has no status.id yet: a stale cache never creates twice', async () => {
    const h = harness({ spec: { name: 'one' } });
    await h.reconcile();
    // The key runs again before the cache saw the status write (it has the finalizer), with a
    // spec edit on top.
    h.object = { ...h.object, spec: { name: 'two' }, metadata: { ...h.object.metadata, generation: 4 } };
    h.cacheShows({ ...h.object, status: undefined });
    await h.reconcile();
    expect(h.api).toEqual(['POST key=uid-1', 'GET thg_1', 'PATCH thg_1']);
    expect([...h.server.keys()]).toEqual(['thg_1']);
  });

  it('resends a create whose answer was lost with its first inputs after a spec change: one resource, updated', async () => {
    const h = harness({ spec: { name: 'one' } });
    h.loseNextCreateAnswer();
    await expect(h.reconcile()).rejects.toThrow(/socket hang up/);
    expect(h.object.status?.id).toBeUndefined();
    h.object = { ...h.object, spec: { name: 'two' }, metadata: { ...h.object.metadata, generation: 4 } };
    await h.reconcile();
    // The lost create again (its key, its body: replayed), then the spec's change as an update.
    expect(h.api).toEqual(['POST key=uid-1', 'POST key=uid-1', 'PATCH thg_1']);
    expect([...h.server.values()]).toEqual([{ id: 'thg_1', uri: '/things/thg_1', name: 'two' }]);
    expect(h.object.status?.id).toBe('thg_1');
    expect(ready(h.object)).toMatchObject({ status: 'True', reason: 'Created', observedGeneration: 4 });
    // Answered: nothing is resent any more.
    await h.reconcile();
    expect(h.api.filter((call) => call.startsWith('POST'))).toHaveLength(2);
  });

  it('after a restart, a changed spec finds what the lost create made (the server names it): tracked, updated, one resource', async () => {
    const h = harness({ spec: { name: 'one' } });
    h.loseNextCreateAnswer();
    await expect(h.reconcile()).rejects.toThrow(/socket hang up/);
    h.restart();
    h.object = { ...h.object, spec: { name: 'two' }, metadata: { ...h.object.metadata, generation: 4 } };
    // The same key with the new body: refused, naming thg_1. It is tracked, and the reconcile runs again.
    expect(await h.reconcile()).toEqual({ requeueAfterMs: 0 });
    expect(h.object.status?.id).toBe('thg_1');
    expect(ready(h.object)).toMatchObject({ status: 'False', reason: 'LostCreateFound' });
    expect(ready(h.object)?.message).toContain('tracking thg_1');
    expect(h.events).toContain('Warning LostCreateFound');
    await h.reconcile();
    expect(h.api).toEqual(['POST key=uid-1', 'POST key=uid-1', 'GET thg_1', 'PATCH thg_1']);
    expect([...h.server.values()]).toEqual([{ id: 'thg_1', uri: '/things/thg_1', name: 'two' }]);
    expect(ready(h.object)).toMatchObject({ status: 'True', reason: 'Updated', observedGeneration: 4 });
  });

  it('a found lost create the sync cannot keep (a token that went with the answer) is replaced, then deleted', async () => {
    const h = harness({ spec: { name: 'one' } });
    h.loseNextCreateAnswer();
    await expect(h.reconcile()).rejects.toThrow(/socket hang up/);
    h.restart();
    h.object = { ...h.object, spec: { name: 'two' }, metadata: { ...h.object.metadata, generation: 4 } };
    await h.reconcile();
    h.replaceBecause('its token was in the lost answer');
    await h.reconcile();
    expect(h.api.slice(2)).toEqual(['GET thg_1', 'POST key=uid-1-replaces-thg_1', 'DELETE thg_1']);
    expect([...h.server.keys()]).toEqual(['thg_2']);
    expect(h.object.status?.id).toBe('thg_2');
  });

  it('a replacement whose answer was lost, then a restart and a new spec: that one is deleted, a new one made', async () => {
    const h = harness({ spec: { name: 'one' } });
    await h.reconcile();
    h.replaceBecause('its token is lost');
    h.loseNextCreateAnswer();
    await expect(h.reconcile()).rejects.toThrow(/socket hang up/);
    h.restart();
    h.object = { ...h.object, spec: { name: 'two' }, metadata: { ...h.object.metadata, generation: 4 } };
    await h.reconcile();
    expect(h.api.slice(3)).toEqual([
      'GET thg_1',
      'POST key=uid-1-replaces-thg_1',
      'DELETE thg_2',
      'POST key=uid-1-replaces-thg_1-after-thg_2',
      'DELETE thg_1',
    ]);
    expect([...h.server.values()]).toEqual([{ id: 'thg_3', uri: '/things/thg_3', name: 'two' }]);
    expect(h.object.status?.id).toBe('thg_3');
  });

  it('a found lost create keeps the progress its sync recorded; a part refused records the top resource', async () => {
    const withBackend = harness({ spec: { name: 'one' } });
    withBackend.failCreateWith(new SyncProgressError({ backendId: 'bkd_1' }, keyReused('thg_9')));
    expect(await withBackend.reconcile()).toEqual({ requeueAfterMs: 0 });
    expect(withBackend.object.status).toMatchObject({ id: 'thg_9', backendId: 'bkd_1' });
    // A policy made, then one of its rules refused for its key: the policy is what status tracks.
    const withPart = harness({ spec: { name: 'one' } });
    withPart.failCreateWith(new SyncProgressError({ id: 'thg_7' }, keyReused('rule_1')));
    await withPart.reconcile();
    expect(withPart.object.status?.id).toBe('thg_7');
  });

  it('a create refused with an answer made nothing: the next spec creates without resending it', async () => {
    const h = harness({ spec: { name: 'one' } });
    h.failCreateWith(apiError(409));
    await expect(h.reconcile()).rejects.toMatchObject({ statusCode: 409 });
    h.failCreateWith(undefined);
    h.object = { ...h.object, spec: { name: 'two' }, metadata: { ...h.object.metadata, generation: 4 } };
    await h.reconcile();
    expect(h.api).toEqual(['POST key=uid-1', 'POST key=uid-1']);
    expect(h.server.size).toBe(1);
  });

  it('a refusal wrapped in the progress of a sync (a backend made first) is an answer too: nothing resent', async () => {
    const h = harness({ spec: { name: 'one' } });
    h.failCreateWith(new SyncProgressError({ backendId: 'bkd_1' }, apiError(409)));
    await expect(h.reconcile()).rejects.toBeInstanceOf(SyncProgressError);
    h.object = { ...h.object, metadata: { ...h.object.metadata, deletionTimestamp: new Date() } };
    await h.reconcile();
    expect(h.api).toEqual(['POST key=uid-1']);
    expect(h.object.metadata?.finalizers ?? []).not.toContain('edgeward.dev/finalizer');
  });

  it('deletes what a create whose answer was lost made when the CR is deleted before a retry', async () => {
    const h = harness({ spec: { name: 'one' } });
    h.loseNextCreateAnswer();
    await expect(h.reconcile()).rejects.toThrow(/socket hang up/);
    h.object = { ...h.object, metadata: { ...h.object.metadata, deletionTimestamp: new Date() } };
    await h.reconcile();
    expect(h.api).toEqual(['POST key=uid-1', 'POST key=uid-1', 'DELETE thg_1']);
    expect(h.server.size).toBe(0);
  });

  it('deletes the server resource even when the cache shows the deleted CR without its id', async () => {
    const h = harness({ spec: { name: 'one' } });
    const beforeCreate = h.object;
    await h.reconcile();
    const deleting = { metadata: { ...h.object.metadata, deletionTimestamp: new Date() } };
    h.object = { ...h.object, ...deleting };
    h.cacheShows({ ...beforeCreate, metadata: { ...beforeCreate.metadata, ...deleting.metadata } });
    await h.reconcile();
    expect(h.api).toEqual(['POST key=uid-1', 'DELETE thg_1']);
    expect(h.server.size).toBe(0);
  });

  it('stamps the generation it worked from, not a newer one it met in a write conflict', async () => {
    const h = harness({ spec: { name: 'one' } });
    h.failCreateWith(apiError(400));
    h.conflictOnNextStatusWrite((current) => ({
      ...current,
      spec: { name: 'fixed' },
      metadata: { ...current.metadata, generation: 4 },
    }));
    await h.reconcile();
    expect(ready(h.object)).toMatchObject({ status: 'False', reason: 'InvalidSpec', observedGeneration: 3 });
    expect(h.object.status?.observedGeneration).toBe(3);
    // So the fixed generation is not mistaken for the terminal one, and is applied.
    h.failCreateWith(undefined);
    await h.reconcile();
    expect(h.api.at(-1)).toBe('POST key=uid-1');
    expect(ready(h.object)).toMatchObject({ status: 'True', observedGeneration: 4 });
  });

  it('records the id when a step after the create fails, so a delete of the CR deletes it', async () => {
    const h = harness({ spec: { name: 'one' } });
    const secretWrite = new Error('secrets is forbidden');
    h.failAfterCreateWith(secretWrite);
    await expect(h.reconcile()).rejects.toThrow('secrets is forbidden');
    expect(h.object.status?.id).toBe('thg_1');
    expect(ready(h.object)).toMatchObject({ status: 'False', reason: 'ApiUnavailable' });
    h.object = { ...h.object, metadata: { ...h.object.metadata, deletionTimestamp: new Date() } };
    await h.reconcile();
    expect(h.api).toEqual(['POST key=uid-1', 'DELETE thg_1']);
  });

  it('retries 401, 403, 404 and 409 with backoff under their own reasons; 422 and 413 are InvalidSpec', async () => {
    for (const [code, reason] of [
      [401, 'Unauthorized'],
      [403, 'Forbidden'],
      [404, 'NotFound'],
      [409, 'Conflict'],
    ] as const) {
      const h = harness({ spec: { name: 'one' } });
      const error = apiError(code);
      h.failCreateWith(error);
      await expect(h.reconcile()).rejects.toBe(error);
      expect(ready(h.object)).toMatchObject({ status: 'False', reason });
    }
    for (const code of [413, 422]) {
      const h = harness({ spec: { name: 'one' } });
      h.failCreateWith(apiError(code));
      await expect(h.reconcile()).resolves.toBeUndefined();
      expect(ready(h.object)).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    }
  });

  it('when paused, claims no generation it did not apply', async () => {
    const h = harness({ spec: { name: 'one' } });
    await h.reconcile();
    h.object = {
      ...h.object,
      spec: { name: 'two' },
      metadata: { ...h.object.metadata, generation: 4, annotations: { 'edgeward.dev/paused': 'true' } },
    };
    await h.reconcile();
    expect(h.object.status?.observedGeneration).toBe(3);
    expect(ready(h.object)).toMatchObject({ status: 'True', observedGeneration: 3 });
    expect(h.object.status?.conditions?.find((c) => c.type === 'Synced')).toMatchObject({
      reason: 'Paused',
      observedGeneration: 4,
    });
  });

  it('lets the sync let go of what it owns before orphaning the server resource', async () => {
    const h = harness({ spec: { name: 'one', deletionPolicy: 'Orphan' } });
    h.orphanRecords();
    await h.reconcile();
    h.object = { ...h.object, metadata: { ...h.object.metadata, deletionTimestamp: new Date() } };
    await h.reconcile();
    expect(h.api).toEqual(['POST key=uid-1', 'ORPHAN']);
    expect(h.server.size).toBe(1);
    expect(h.object.metadata?.finalizers).toEqual([]);
  });

  it('writes extra conditions with Ready in one status write, and again only when they change', async () => {
    const h = harness({ spec: { name: 'one' } });
    let now = health('False', 'target answered 503', 60_000);
    h.reportConditions(() => now);
    expect(await h.reconcile()).toEqual({ requeueAfterMs: 60_000 });
    expect(h.api).toEqual(['POST key=uid-1', 'GET thg_1/health']);
    expect(h.kube).toEqual(['patch test,add', 'status', MIRROR_THG_1]);
    expect(ready(h.object)).toMatchObject({ status: 'True', reason: 'Created' });
    expect(healthy(h.object)).toMatchObject({ status: 'False', reason: 'Broken', observedGeneration: 3 });
    // Failing for a while: a transition would show as a new time.
    const failingSince = '2020-01-01T00:00:00Z';
    const conditions = h.object.status?.conditions?.map((c) =>
      c.type === 'Healthy' ? { ...c, lastTransitionTime: failingSince } : c,
    );
    h.object = { ...h.object, status: { ...h.object.status, conditions } };

    // The same state again: nothing to write, and the requeue still asked for.
    h.kube.length = 0;
    expect(await h.reconcile()).toEqual({ requeueAfterMs: 60_000 });
    expect(h.kube).toEqual([]);

    // A new message alone is written, yet is no transition.
    now = health('False', 'target answered 502', 60_000);
    await h.reconcile();
    expect(h.kube).toEqual(['status']);
    expect(healthy(h.object)).toMatchObject({
      message: 'target answered 502',
      lastTransitionTime: failingSince,
    });

    now = health('True', 'fine');
    expect(await h.reconcile()).toBeUndefined();
    expect(healthy(h.object)).toMatchObject({ status: 'True', reason: 'Fine' });
    expect(healthy(h.object)?.lastTransitionTime).not.toBe(failingSince);
    expect(ready(h.object)).toMatchObject({ status: 'True', reason: 'Created' });
  });

  it('takes out an extra condition the sync says no longer applies, and writes nothing once it is gone', async () => {
    const h = harness({ spec: { name: 'one' } });
    h.reportConditions(() => health('False', 'target answered 503'));
    await h.reconcile();
    expect(healthy(h.object)).toMatchObject({ status: 'False' });
    h.reportConditions(() => ({ conditions: [], removed: ['Healthy'] }));
    h.kube.length = 0;
    expect(await h.reconcile()).toBeUndefined();
    expect(h.kube).toEqual(['status']);
    expect(healthy(h.object)).toBeUndefined();
    expect(h.object.status?.conditions?.map((c) => c.type)).toEqual(['Ready', 'Synced']);
    h.kube.length = 0;
    await h.reconcile();
    expect(h.kube).toEqual([]);
  });

  it('keeps the previous extra conditions and Ready when reading them fails, and logs it', async () => {
    const h = harness({ spec: { name: 'one' } });
    h.reportConditions(() => health('True', 'fine'));
    await h.reconcile();
    const before = h.object.status;
    h.kube.length = 0;
    h.reportConditions(() => {
      throw apiError(503);
    });
    const lines: string[] = [];
    const log = createLogger({ level: 'warn', destination: { write: (line: string) => lines.push(line) } });
    await expect(h.reconcileWith({ ...context, log })).resolves.toBeUndefined();
    expect(h.kube).toEqual([]);
    expect(h.object.status).toEqual(before);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({
      id: 'thg_1',
      msg: 'reading conditions failed: keeping the previous ones',
      err: { message: expect.stringContaining('503') },
    });
  });

  it('reads no extra conditions when the apply failed: they keep what they had', async () => {
    const h = harness({ spec: { name: 'one' } });
    h.reportConditions(() => health('True', 'fine'));
    h.failCreateWith(apiError(503));
    await expect(h.reconcile()).rejects.toMatchObject({ statusCode: 503 });
    expect(h.api).toEqual(['POST key=uid-1']);
    expect(healthy(h.object)).toBeUndefined();
  });

  it('starts no server write and writes no status once aborted (leadership lost)', async () => {
    const h = harness({ spec: { name: 'one' } });
    const abort = new AbortController();
    abort.abort(new Error('leadership lost'));
    await expect(h.reconcileWith({ ...context, signal: abort.signal })).rejects.toThrow('leadership lost');
    expect(h.api).toEqual([]);
    expect(h.kube.filter((write) => write === 'status')).toEqual([]);
  });
});
