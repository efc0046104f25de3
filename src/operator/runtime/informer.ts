import type { KubernetesObject } from '@kubernetes/client-node';
import type { CacheTransform } from './cache-transform.js';
import { pause } from './delay.js';
import { isGone } from './kube-errors.js';
import type { ListWatchSource, WatchHandle, WatchStatus } from './list-watch.js';
import { type Logger, silentLogger } from './logger.js';
import { type CacheReader, ObjectCache } from './object-cache.js';
import { keyOf, type ResourceKind } from './resource-types.js';

export interface InformerHandlers<T extends KubernetesObject> {
  onAdd?(object: T): void;
  onUpdate?(previous: T, object: T): void;
  onDelete?(object: T): void;
}

export interface InformerOptions<T extends KubernetesObject> {
  kind: ResourceKind;
  source: ListWatchSource<T>;
  /** Namespaces to watch (one list+watch each); undefined or empty: all namespaces, one list+watch. */
  namespaces?: readonly string[];
  /** Page size of lists. Default 500. */
  pageSize?: number;
  /** Server-side watch timeout in s; default a random 5-10 min so replicas do not reconnect in step. */
  watchTimeoutSeconds?: number;
  /** Backoff between failed lists/watches: doubles from initialMs to maxMs, jittered. */
  backoff?: { initialMs?: number; maxMs?: number };
  /**
   * Applied to every listed and watched object before it is cached or handed to handlers (the
   * cache holds only what it returns): drop what no reconcile reads. Default: none.
   */
  transform?: CacheTransform;
  /**
   * Which objects to cache (after `transform`); default all. One that stops passing is forgotten
   * without an event (it was not deleted); one that starts passing is added by its next event.
   * The deletion of an uncached object that passes is still reported, so whoever read it directly
   * learns it is gone.
   */
  filter?: (object: T) => boolean;
  log?: Logger;
  random?: () => number;
}

/** Counters for logs and tests. */
export interface InformerStats {
  /** Completed full lists (the first one and every relist). */
  lists: number;
  /** Relists caused by 410 Gone (watch too old, or a list's continue token expired). */
  relistsAfterGone: number;
  watchesStarted: number;
  /** Failed lists and watches (each followed by a backoff). */
  errors: number;
}

class GoneError extends Error {
  readonly statusCode = 410;
}

/** What a reflector may do to its informer (kept off the informer's public surface). */
interface ReflectorSink<T extends KubernetesObject> {
  readonly options: InformerOptions<T>;
  readonly log: Logger;
  readonly stats: InformerStats;
  upsert(object: T): void;
  delete(object: T): void;
  replace(namespace: string | undefined, items: T[]): void;
  notifySynced(): void;
}

/**
 * What a controller reads of an informer: its cache (never the watch machinery). `Informer`
 * fills it from list+watch; unit tests use an in-memory fake (test/support/fake/informer.ts).
 */
export interface InformerReader<T extends KubernetesObject> {
  readonly cache: CacheReader<T>;
}

/**
 * List+watch of one kind into a local cache, like client-go's shared informer: lists (paged),
 * then watches from the list's resourceVersion, advancing it with every event and bookmark; on
 * 410 Gone it relists and reports the differences as add/update/delete; on any other failure
 * (429 while a new CRD's watch cache warms up, 5xx, a dropped connection) it retries with
 * jittered exponential backoff, resuming the watch where it was.
 */
export class Informer<T extends KubernetesObject> implements InformerReader<T> {
  readonly kind: ResourceKind;
  readonly #cache = new ObjectCache<T>();
  readonly #handlers = new Set<InformerHandlers<T>>();
  readonly #reflectors: Reflector<T>[];
  readonly #log: Logger;
  readonly #syncWaiters = new Set<() => void>();
  readonly #filter: ((object: T) => boolean) | undefined;
  #abort: AbortController | undefined;
  #running: Promise<void>[] = [];
  readonly stats: InformerStats = { lists: 0, relistsAfterGone: 0, watchesStarted: 0, errors: 0 };

  constructor(options: InformerOptions<T>) {
    this.kind = options.kind;
    this.#log = (options.log ?? silentLogger).child({ informer: options.kind.kind });
    this.#filter = options.filter;
    const namespaces = [...new Set(options.namespaces ?? [])];
    const scopes = namespaces.length === 0 ? [undefined] : namespaces;
    const sink: ReflectorSink<T> = {
      options,
      log: this.#log,
      stats: this.stats,
      upsert: (object) => this.#upsert(object),
      delete: (object) => this.#delete(object),
      replace: (namespace, items) => this.#replace(namespace, items),
      notifySynced: () => {
        if (this.hasSynced()) for (const wake of this.#syncWaiters) wake();
      },
    };
    this.#reflectors = scopes.map((namespace) => new Reflector(sink, namespace));
  }

  get cache(): CacheReader<T> {
    return this.#cache;
  }

  /**
   * Adds handlers; with `replay` (default) they first get `onAdd` for every cached object, so a
   * late subscriber misses nothing. Returns a function that removes them.
   */
  addHandlers(handlers: InformerHandlers<T>, options: { replay?: boolean } = {}): () => void {
    this.#handlers.add(handlers);
    if (options.replay ?? true) {
      for (const object of this.#cache.list()) this.#call('onAdd', () => handlers.onAdd?.(object));
    }
    return () => this.#handlers.delete(handlers);
  }

  start(): void {
    if (this.#abort) return;
    this.#abort = new AbortController();
    const signal = this.#abort.signal;
    this.#running = this.#reflectors.map((reflector) => reflector.run(signal));
  }

  async stop(): Promise<void> {
    this.#abort?.abort();
    await Promise.all(this.#running);
    this.#running = [];
    this.#abort = undefined;
    for (const wake of this.#syncWaiters) wake();
  }

  /** True once every namespace's first list is in the cache. */
  hasSynced(): boolean {
    return this.#reflectors.every((reflector) => reflector.synced);
  }

  /** Resolves when synced; rejects when the informer stops first or the signal aborts. */
  async waitForSync(signal?: AbortSignal): Promise<void> {
    while (!this.hasSynced()) {
      if (!this.#abort) throw new Error(`informer for ${this.kind.kind} stopped before it synced`);
      signal?.throwIfAborted();
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.#syncWaiters.delete(wake);
          signal?.removeEventListener('abort', wake);
          resolve();
        };
        this.#syncWaiters.add(wake);
        signal?.addEventListener('abort', wake, { once: true });
      });
    }
  }

  /** The resourceVersion each namespace's watch continues from (undefined: a list is due). */
  resourceVersions(): Array<{ namespace: string | undefined; resourceVersion: string | undefined }> {
    return this.#reflectors.map((reflector) => ({
      namespace: reflector.namespace,
      resourceVersion: reflector.resourceVersion,
    }));
  }

  #upsert(object: T): void {
    if (this.#filter && !this.#filter(object)) {
      this.#cache.remove(keyOf(object));
      return;
    }
    const previous = this.#cache.put(object);
    if (!previous) {
      this.#emit('onAdd', (handlers) => handlers.onAdd?.(object));
    } else if (previous.metadata?.resourceVersion !== object.metadata?.resourceVersion) {
      this.#emit('onUpdate', (handlers) => handlers.onUpdate?.(previous, object));
    }
  }

  #delete(object: T): void {
    const cached = this.#cache.remove(keyOf(object));
    if (cached || this.#filter?.(object)) this.#emit('onDelete', (handlers) => handlers.onDelete?.(object));
  }

  /** A full list of one scope: store it, and delete what the cache has in that scope but the list has not. */
  #replace(namespace: string | undefined, items: T[]): void {
    const listed = new Set<string>();
    for (const item of items) {
      listed.add(keyOf(item));
      this.#upsert(item);
    }
    for (const object of this.#cache.list(namespace)) {
      if (!listed.has(keyOf(object))) this.#delete(object);
    }
  }

  #emit(what: string, call: (handlers: InformerHandlers<T>) => void): void {
    for (const handlers of this.#handlers) this.#call(what, () => call(handlers));
  }

  #call(what: string, call: () => void): void {
    try {
      call();
    } catch (error) {
      // A failing handler must not stop the watch nor the other handlers.
      this.#log.error({ err: error, handler: what }, 'informer handler failed');
    }
  }
}

/** The list+watch loop of one namespace (or of all). */
class Reflector<T extends KubernetesObject> {
  readonly namespace: string | undefined;
  readonly #informer: ReflectorSink<T>;
  resourceVersion: string | undefined;
  synced = false;
  #failures = 0;

  constructor(informer: ReflectorSink<T>, namespace: string | undefined) {
    this.#informer = informer;
    this.namespace = namespace;
  }

  async run(signal: AbortSignal): Promise<void> {
    const { stats, log } = this.#informer;
    while (!signal.aborted) {
      try {
        if (this.resourceVersion === undefined) await this.#list(signal);
        if (signal.aborted) return;
        const watched = await this.#watch(signal);
        // A stream the server closes at once, with nothing on it, is a failure in disguise.
        if (watched.events === 0 && watched.durationMs < 1000 && !signal.aborted) {
          throw new Error('watch closed immediately');
        }
      } catch (error) {
        if (signal.aborted) return;
        if (isGone(error)) {
          // Our resourceVersion (or continue token) is older than the server keeps: start over.
          log.info({ namespace: this.namespace }, 'resourceVersion expired (410 Gone): relisting');
          this.resourceVersion = undefined;
          stats.relistsAfterGone += 1;
          continue;
        }
        stats.errors += 1;
        this.#failures += 1;
        const delay = this.#backoffMs();
        log.warn({ err: error, namespace: this.namespace, retryInMs: delay }, 'list/watch failed');
        if (!(await pause(delay, signal))) return;
      }
    }
  }

  #backoffMs(): number {
    const { backoff, random = Math.random } = this.#informer.options;
    const initial = backoff?.initialMs ?? 500;
    const max = backoff?.maxMs ?? 30_000;
    const ceiling = Math.min(max, initial * 2 ** Math.min(this.#failures - 1, 30));
    return Math.round(ceiling * (0.5 + random() / 2));
  }

  async #list(signal: AbortSignal): Promise<void> {
    const { source, pageSize = 500, transform } = this.#informer.options;
    const items: T[] = [];
    let next: string | undefined;
    let resourceVersion = '';
    do {
      const page = await source.list(this.namespace, { limit: pageSize, continue: next });
      // Trimmed page by page: a relist of 10,000 objects never holds them all untrimmed at once.
      for (const item of page.items) items.push(transform ? transform(item) : item);
      next = page.continue;
      resourceVersion = page.resourceVersion;
    } while (next && !signal.aborted);
    if (signal.aborted) return;
    this.#informer.replace(this.namespace, items);
    this.resourceVersion = resourceVersion;
    this.#informer.stats.lists += 1;
    this.#failures = 0;
    if (!this.synced) {
      this.synced = true;
      this.#informer.notifySynced();
    }
  }

  /** One watch, until the server ends it (resolves) or it fails (rejects; 410 as GoneError). */
  #watch(signal: AbortSignal): Promise<{ events: number; durationMs: number }> {
    const { source, watchTimeoutSeconds, random = Math.random, transform } = this.#informer.options;
    const trim = (object: T) => (transform ? transform(object) : object);
    const informer = this.#informer;
    const started = Date.now();
    let events = 0;
    let handle: WatchHandle | undefined;
    let settled = false;
    return new Promise((resolve, reject) => {
      const finish = (error: unknown) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        handle?.abort();
        if (error) reject(error);
        else resolve({ events, durationMs: Date.now() - started });
      };
      const onAbort = () => finish(null);
      signal.addEventListener('abort', onAbort, { once: true });
      const advance = (object: T) => {
        const version = object.metadata?.resourceVersion;
        if (version) this.resourceVersion = version;
      };
      informer.stats.watchesStarted += 1;
      source
        .watch(
          this.namespace,
          {
            resourceVersion: this.resourceVersion ?? '',
            timeoutSeconds: watchTimeoutSeconds ?? Math.round(300 * (1 + random())),
          },
          (type, object) => {
            if (settled) return;
            if (type !== 'ERROR') {
              events += 1;
              this.#failures = 0;
            }
            switch (type) {
              case 'ADDED':
              case 'MODIFIED':
                informer.upsert(trim(object as T));
                advance(object as T);
                break;
              case 'DELETED':
                informer.delete(trim(object as T));
                advance(object as T);
                break;
              case 'BOOKMARK':
                advance(object as T);
                break;
              case 'ERROR': {
                const status = object as WatchStatus;
                finish(
                  status.code === 410
                    ? new GoneError(status.message ?? 'Gone')
                    : Object.assign(new Error(`watch error: ${status.message ?? 'unknown'}`), {
                        statusCode: status.code,
                      }),
                );
                break;
              }
            }
          },
          (error) => finish(error ?? null),
        )
        .then(
          (opened) => {
            handle = opened;
            if (settled) opened.abort();
          },
          (error: unknown) => finish(error ?? new Error('watch failed to start')),
        );
    });
  }
}
