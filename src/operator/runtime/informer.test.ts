import type { KubernetesObject } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { stripForCache } from './cache-transform.js';
import { Informer, type InformerOptions } from './informer.js';
import type { ListWatchSource, WatchEventType, WatchStatus } from './list-watch.js';
import { CONFIG_MAP } from './resource-types.js';

/*
 * The informer's failure handling against a scripted list/watch source: 410 Gone (both as an
 * ERROR event in the stream, which is how kube-apiserver reports a too-old resourceVersion, and
 * as an HTTP status), 429, 500, expired continue tokens. test/kubernetes/runtime.test.ts covers
 * the same informer against a real kube-apiserver, including a real 410.
 */

type Obj = KubernetesObject & { data?: Record<string, string> };

const obj = (namespace: string, name: string, resourceVersion: string, value = ''): Obj => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { namespace, name, resourceVersion },
  data: { value },
});

interface OpenWatch {
  namespace: string | undefined;
  resourceVersion: string;
  emit(type: WatchEventType, object: Obj | WatchStatus): void;
  end(error?: unknown): void;
  aborted: boolean;
}

class ScriptedSource implements ListWatchSource<Obj> {
  /** What each list returns, by namespace ('' = all); pages of `pageSize`. */
  items = new Map<string, Obj[]>();
  listVersion = '100';
  readonly lists: Array<{ namespace: string | undefined; continue?: string }> = [];
  readonly watches: OpenWatch[] = [];
  readonly listFailures: unknown[] = [];
  readonly watchRefusals: unknown[] = [];
  #waiters: Array<() => void> = [];

  async list(namespace: string | undefined, options: { limit: number; continue?: string }) {
    this.lists.push({ namespace, continue: options.continue });
    const failure = this.listFailures.shift();
    if (failure) throw failure;
    const all = this.items.get(namespace ?? '') ?? [];
    const start = Number(options.continue ?? 0);
    const items = all.slice(start, start + options.limit);
    const next = start + options.limit < all.length ? String(start + options.limit) : undefined;
    return { items, resourceVersion: this.listVersion, ...(next ? { continue: next } : {}) };
  }

  async watch(
    namespace: string | undefined,
    options: { resourceVersion: string },
    onEvent: (type: WatchEventType, object: Obj | WatchStatus) => void,
    onDone: (error: unknown) => void,
  ) {
    const refusal = this.watchRefusals.shift();
    if (refusal) {
      onDone(refusal);
      return { abort() {} };
    }
    let ended = false;
    const watch: OpenWatch = {
      namespace,
      resourceVersion: options.resourceVersion,
      aborted: false,
      emit: (type, object) => {
        if (!ended) onEvent(type, object);
      },
      end: (error) => {
        if (ended) return;
        ended = true;
        onDone(error ?? null);
      },
    };
    this.watches.push(watch);
    for (const wake of this.#waiters.splice(0)) wake();
    return {
      abort: () => {
        watch.aborted = true;
        watch.end(new Error('aborted'));
      },
    };
  }

  /** Waits until `count` watches have been opened. */
  async watchNumber(count: number): Promise<OpenWatch> {
    while (this.watches.length < count) await new Promise<void>((resolve) => this.#waiters.push(resolve));
    const watch = this.watches[count - 1];
    if (!watch) throw new Error('unreachable');
    return watch;
  }
}

function recorder() {
  const events: string[] = [];
  return {
    events,
    handlers: {
      onAdd: (o: Obj) => events.push(`add ${o.metadata?.name}@${o.metadata?.resourceVersion}`),
      onUpdate: (p: Obj, o: Obj) =>
        events.push(
          `update ${o.metadata?.name}@${p.metadata?.resourceVersion}->${o.metadata?.resourceVersion}`,
        ),
      onDelete: (o: Obj) => events.push(`delete ${o.metadata?.name}`),
    },
  };
}

const informers: Informer<Obj>[] = [];
function informerOf(
  source: ScriptedSource,
  namespaces?: string[],
  pageSize = 500,
  cacheOptions: Pick<InformerOptions<Obj>, 'transform' | 'filter'> = {},
): Informer<Obj> {
  const informer = new Informer<Obj>({
    kind: CONFIG_MAP,
    source,
    namespaces,
    pageSize,
    ...cacheOptions,
    backoff: { initialMs: 5, maxMs: 20 },
    random: () => 0.5,
  });
  informers.push(informer);
  return informer;
}

const names = (informer: Informer<Obj>) => informer.cache.keys().sort();

afterEach(async () => {
  await Promise.all(informers.splice(0).map((informer) => informer.stop()));
});

describe('Informer', () => {
  it('lists page by page, syncs, then applies watch events from the list resourceVersion', async () => {
    const source = new ScriptedSource();
    source.items.set('', [obj('a', 'one', '10'), obj('a', 'two', '11'), obj('b', 'three', '12')]);
    const informer = informerOf(source, undefined, 2);
    const { events, handlers } = recorder();
    informer.addHandlers(handlers);
    expect(informer.hasSynced()).toBe(false);
    informer.start();
    await informer.waitForSync();
    expect(source.lists).toEqual([
      { namespace: undefined, continue: undefined },
      { namespace: undefined, continue: '2' },
    ]);
    expect(names(informer)).toEqual(['a/one', 'a/two', 'b/three']);
    const watch = await source.watchNumber(1);
    expect(watch.resourceVersion).toBe('100');
    watch.emit('ADDED', obj('a', 'four', '101'));
    watch.emit('MODIFIED', obj('a', 'one', '102', 'changed'));
    watch.emit('DELETED', obj('a', 'two', '103'));
    watch.emit('BOOKMARK', { metadata: { resourceVersion: '150' } } as Obj);
    expect(events).toEqual([
      'add one@10',
      'add two@11',
      'add three@12',
      'add four@101',
      'update one@10->102',
      'delete two',
    ]);
    expect(informer.cache.get('a', 'one')?.data?.value).toBe('changed');
    expect(
      informer.cache
        .list('a')
        .map((o) => o.metadata?.name)
        .sort(),
    ).toEqual(['four', 'one']);
    expect(informer.resourceVersions()).toEqual([{ namespace: undefined, resourceVersion: '150' }]);
    // A normal end of the stream (server timeout) resumes from the last resourceVersion, no relist.
    watch.end();
    const next = await source.watchNumber(2);
    expect(next.resourceVersion).toBe('150');
    expect(source.lists).toHaveLength(2);
  });

  it('relists on a 410 ERROR event and reports what changed meanwhile as add/update/delete', async () => {
    const source = new ScriptedSource();
    source.items.set('', [obj('a', 'keep', '10'), obj('a', 'change', '11'), obj('a', 'vanish', '12')]);
    const informer = informerOf(source);
    const { events, handlers } = recorder();
    informer.addHandlers(handlers);
    informer.start();
    await informer.waitForSync();
    const watch = await source.watchNumber(1);
    events.length = 0;
    // Meanwhile on the server: one changed, one deleted, one created; our watch is too old.
    source.items.set('', [obj('a', 'keep', '10'), obj('a', 'change', '205'), obj('a', 'new', '206')]);
    source.listVersion = '210';
    watch.emit('ERROR', {
      kind: 'Status',
      code: 410,
      reason: 'Expired',
      message: 'too old resource version',
    });
    const after = await source.watchNumber(2);
    expect(after.resourceVersion).toBe('210');
    expect(informer.stats.relistsAfterGone).toBe(1);
    expect(informer.stats.lists).toBe(2);
    expect(informer.stats.errors).toBe(0);
    expect(events.sort()).toEqual(['add new@206', 'delete vanish', 'update change@11->205']);
    expect(names(informer)).toEqual(['a/change', 'a/keep', 'a/new']);
  });

  it('relists when the watch request itself is answered 410', async () => {
    const source = new ScriptedSource();
    source.items.set('', [obj('a', 'one', '10')]);
    source.watchRefusals.push(Object.assign(new Error('Gone'), { statusCode: 410 }));
    const informer = informerOf(source);
    informer.start();
    await source.watchNumber(1);
    expect(source.lists).toHaveLength(2);
    expect(informer.stats.relistsAfterGone).toBe(1);
  });

  it('retries a refused watch (429 while a new CRD warms up) with backoff, from the same resourceVersion', async () => {
    const source = new ScriptedSource();
    source.items.set('', [obj('a', 'one', '10')]);
    const tooMany = Object.assign(new Error('Too Many Requests'), { statusCode: 429 });
    source.watchRefusals.push(tooMany, tooMany, tooMany);
    const informer = informerOf(source);
    informer.start();
    const watch = await source.watchNumber(1);
    expect(watch.resourceVersion).toBe('100');
    expect(source.lists).toHaveLength(1);
    expect(informer.stats.errors).toBe(3);
    expect(informer.stats.watchesStarted).toBe(4);
  });

  it('retries failed lists and is not synced until one succeeds', async () => {
    const source = new ScriptedSource();
    source.items.set('', [obj('a', 'one', '10')]);
    source.listFailures.push(
      Object.assign(new Error('boom'), { statusCode: 500 }),
      Object.assign(new Error('boom'), { statusCode: 503 }),
    );
    const informer = informerOf(source);
    informer.start();
    expect(informer.hasSynced()).toBe(false);
    await informer.waitForSync();
    expect(source.lists).toHaveLength(3);
    expect(informer.stats.errors).toBe(2);
    expect(names(informer)).toEqual(['a/one']);
  });

  it('restarts a paged list whose continue token expired (410)', async () => {
    const source = new ScriptedSource();
    source.items.set('', [obj('a', 'one', '10'), obj('a', 'two', '11'), obj('a', 'three', '12')]);
    const informer = informerOf(source, undefined, 2);
    const originalList = source.list.bind(source);
    let failed = false;
    source.list = async (namespace, options) => {
      if (options.continue && !failed) {
        failed = true;
        throw Object.assign(new Error('continue token expired'), { statusCode: 410 });
      }
      return originalList(namespace, options);
    };
    informer.start();
    await informer.waitForSync();
    expect(source.lists.map((list) => list.continue ?? '-')).toEqual(['-', '-', '2']);
    expect(names(informer)).toEqual(['a/one', 'a/three', 'a/two']);
  });

  it('runs one list+watch per namespace; a relist of one namespace leaves the others alone', async () => {
    const source = new ScriptedSource();
    source.items.set('a', [obj('a', 'one', '10')]);
    source.items.set('b', [obj('b', 'two', '11')]);
    const informer = informerOf(source, ['a', 'b']);
    informer.start();
    await informer.waitForSync();
    await source.watchNumber(2);
    expect(source.watches.map((watch) => watch.namespace).sort()).toEqual(['a', 'b']);
    const watchA = source.watches.find((watch) => watch.namespace === 'a');
    source.items.set('a', []);
    watchA?.emit('ERROR', { code: 410, message: 'too old' });
    await source.watchNumber(3);
    expect(names(informer)).toEqual(['b/two']);
  });

  it('replays cached objects to late handlers, survives a throwing handler, and stops its watches', async () => {
    const source = new ScriptedSource();
    source.items.set('', [obj('a', 'one', '10')]);
    const informer = informerOf(source);
    informer.addHandlers({
      onAdd: () => {
        throw new Error('handler bug');
      },
    });
    informer.start();
    await informer.waitForSync();
    const late = recorder();
    informer.addHandlers(late.handlers);
    expect(late.events).toEqual(['add one@10']);
    const watch = await source.watchNumber(1);
    watch.emit('ADDED', obj('a', 'two', '101'));
    expect(late.events).toEqual(['add one@10', 'add two@101']);
    await informer.stop();
    expect(watch.aborted).toBe(true);
    await expect(informer.waitForSync()).resolves.toBeUndefined();
  });

  it('caches and hands to handlers only the transformed object, listed or watched', async () => {
    const source = new ScriptedSource();
    const withManagedFields = (o: Obj): Obj => ({
      ...o,
      metadata: { ...o.metadata, managedFields: [{ manager: 'kubectl' }] },
    });
    source.items.set('', [withManagedFields(obj('a', 'one', '10'))]);
    const informer = informerOf(source, undefined, 500, { transform: stripForCache });
    const seen: Obj[] = [];
    informer.addHandlers({ onAdd: (o) => seen.push(o), onUpdate: (_p, o) => seen.push(o) });
    informer.start();
    await informer.waitForSync();
    const watch = await source.watchNumber(1);
    watch.emit('MODIFIED', withManagedFields(obj('a', 'one', '11', 'changed')));
    expect(seen.map((o) => o.metadata?.managedFields)).toEqual([undefined, undefined]);
    // One copy: the handler got the very object the cache holds.
    expect(informer.cache.get('a', 'one')).toBe(seen[1]);
    expect(informer.cache.get('a', 'one')?.data?.value).toBe('changed');
  });

  it('caches only what the filter admits, and still reports deletions of what it admits', async () => {
    const source = new ScriptedSource();
    source.items.set('', [obj('a', 'named', '10'), obj('a', 'unrelated', '11'), obj('a', 'later', '12')]);
    const wanted = new Set(['named']);
    const informer = informerOf(source, undefined, 500, {
      filter: (o) => wanted.has(o.metadata?.name ?? ''),
    });
    const { events, handlers } = recorder();
    informer.addHandlers(handlers);
    informer.start();
    await informer.waitForSync();
    expect(names(informer)).toEqual(['a/named']);
    const watch = await source.watchNumber(1);
    watch.emit('MODIFIED', obj('a', 'unrelated', '13'));
    expect(names(informer)).toEqual(['a/named']);
    // Named after the list: cached from its next change, as an add.
    wanted.add('later');
    watch.emit('MODIFIED', obj('a', 'later', '14'));
    expect(names(informer)).toEqual(['a/later', 'a/named']);
    // No longer wanted: forgotten without an event (it was not deleted).
    wanted.delete('named');
    watch.emit('MODIFIED', obj('a', 'named', '15'));
    expect(names(informer)).toEqual(['a/later']);
    // Wanted but never cached (read directly by its user): its deletion is still reported.
    wanted.add('gone');
    watch.emit('DELETED', obj('a', 'gone', '16'));
    watch.emit('DELETED', obj('a', 'unrelated', '17'));
    expect(events).toEqual(['add named@10', 'add later@14', 'delete gone']);
  });
});
