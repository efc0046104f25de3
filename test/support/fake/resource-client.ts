import { randomUUID } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import type {
  JsonPatchOperation,
  KubeResources,
  ListOptions,
  ListPage,
} from '../../../src/operator/runtime/resource-client.js';
import { keyOf, objectKey, type ResourceKind } from '../../../src/operator/runtime/resource-types.js';
import { applyJsonPatch, applyMergePatch, JsonPatchError } from './json-patch.js';
import { kubeApiError } from './kube-api-error.js';

export type Verb = 'get' | 'list' | 'create' | 'replace' | 'replaceStatus' | 'patch' | 'delete';

/** One request the fake received (client-go's fake calls them actions). */
export interface FakeRequest<T extends KubernetesObject> {
  verb: Verb;
  namespace: string | undefined;
  /** Undefined for a list. */
  name: string | undefined;
  /** What create, replace and replaceStatus sent (a copy). */
  object?: T;
  /** What patch sent. */
  patch?: JsonPatchOperation[] | Record<string, unknown>;
}

/**
 * Runs when a request arrives, before the store answers it: throw to fail the request (a 403, a
 * timeout), write through the client to race it (a concurrent change makes it conflict), or
 * just note it.
 */
export type Interceptor<T extends KubernetesObject> = (request: FakeRequest<T>) => void | Promise<void>;

export type StoreChange = 'ADDED' | 'MODIFIED' | 'DELETED';

/**
 * `KubeResources` over an in-memory store, answering as the apiserver does where controllers
 * rely on it: 404 for an object that is not there, 409 for a create of one that is and for a
 * replace, status replace or delete precondition with a stale resourceVersion/uid, 422 for a JSON
 * patch whose `test` fails. Every write sets a new resourceVersion; writes of the object leave
 * `status` alone and status writes touch nothing else (every edgeward kind has a status
 * subresource). Not emulated: generation bumps, finalizers holding up a delete, field selectors,
 * paging (`list` returns everything matching in one page).
 *
 * Tests seed and inspect the store with `put`, `stored` and `remove` (not recorded as requests),
 * see every request in `requests`, hook into them with `intercept`, and can let a `FakeInformer`
 * follow the store.
 */
export class FakeResourceClient<T extends KubernetesObject> implements KubeResources<T> {
  readonly kind: ResourceKind;
  /** Every request, in order. */
  readonly requests: FakeRequest<T>[] = [];
  readonly #objects = new Map<string, T>();
  readonly #interceptors: { verb: Verb | '*'; interceptor: Interceptor<T> }[] = [];
  readonly #watchers = new Set<(change: StoreChange, object: T) => void>();
  #lastVersion = 0;

  constructor(kind: ResourceKind, objects: Iterable<T> = []) {
    this.kind = kind;
    for (const object of objects) this.put(object);
  }

  /** Runs `interceptor` on every request of `verb` ('*': of every verb) from now on. */
  intercept(verb: Verb | '*', interceptor: Interceptor<T>): void {
    this.#interceptors.push({ verb, interceptor });
  }

  /**
   * Stores `object` as given, as if someone else had written it: its resourceVersion is kept
   * (else a new one is set), so tests can name versions. Followers see the change.
   */
  put(object: T): void {
    const stored = structuredClone(object);
    const version = stored.metadata?.resourceVersion;
    if (version === undefined) this.#stamp(stored);
    else if (/^\d+$/.test(version)) this.#lastVersion = Math.max(this.#lastVersion, Number(version));
    this.#store(stored);
  }

  /** A copy of the stored object, or undefined. */
  stored(namespace: string | undefined, name: string): T | undefined {
    const object = this.#objects.get(objectKey(namespace, name));
    return object && structuredClone(object);
  }

  /** Every stored object (copies), e.g. to start an informer from. */
  storedObjects(): T[] {
    return [...this.#objects.values()].map((object) => structuredClone(object));
  }

  /** Removes an object as if someone else had deleted it. */
  remove(namespace: string | undefined, name: string): void {
    const object = this.#objects.get(objectKey(namespace, name));
    if (!object) return;
    this.#objects.delete(objectKey(namespace, name));
    this.#notify('DELETED', object);
  }

  /** Calls `watcher` after every change of the store, with a copy of the object. */
  watch(watcher: (change: StoreChange, object: T) => void): () => void {
    this.#watchers.add(watcher);
    return () => this.#watchers.delete(watcher);
  }

  async get(namespace: string | undefined, name: string): Promise<T> {
    await this.#receive({ verb: 'get', namespace, name });
    return structuredClone(this.#existing(namespace, name));
  }

  async list(namespace: string | undefined, options: ListOptions = {}): Promise<ListPage<T>> {
    await this.#receive({ verb: 'list', namespace, name: undefined });
    if (options.fieldSelector) throw new Error('FakeResourceClient: field selectors are not supported');
    const wanted = labelRequirements(options.labelSelector);
    const items = [...this.#objects.values()]
      .filter((object) => namespace === undefined || object.metadata?.namespace === namespace)
      .filter((object) => wanted.every((matches) => matches(object.metadata?.labels ?? {})))
      .map((object) => structuredClone(object));
    return { items, resourceVersion: String(this.#lastVersion) };
  }

  async create(object: T): Promise<T> {
    const { namespace, name } = this.#address(object);
    await this.#receive({ verb: 'create', namespace, name, object: structuredClone(object) });
    if (this.#objects.has(objectKey(namespace, name))) throw kubeApiError(409, `${name} already exists`);
    const created = structuredClone(object);
    created.metadata = { ...created.metadata, uid: created.metadata?.uid ?? randomUUID() };
    this.#stamp(created);
    return structuredClone(this.#store(created));
  }

  async replace(object: T): Promise<T> {
    const { namespace, name } = this.#address(object);
    await this.#receive({ verb: 'replace', namespace, name, object: structuredClone(object) });
    const current = this.#current(object);
    const next = withStatusOf(structuredClone(object), current);
    this.#stamp(next);
    return structuredClone(this.#store(next));
  }

  async replaceStatus(object: T): Promise<T> {
    const { namespace, name } = this.#address(object);
    await this.#receive({ verb: 'replaceStatus', namespace, name, object: structuredClone(object) });
    const current = this.#current(object);
    const next = withStatusOf(structuredClone(current), object);
    this.#stamp(next);
    return structuredClone(this.#store(next));
  }

  async patch(
    namespace: string | undefined,
    name: string,
    patch: JsonPatchOperation[] | Record<string, unknown>,
    options: { subresource?: string } = {},
  ): Promise<T> {
    await this.#receive({ verb: 'patch', namespace, name, patch: structuredClone(patch) });
    const current = this.#existing(namespace, name);
    let patched: T;
    try {
      patched = Array.isArray(patch) ? applyJsonPatch(current, patch) : applyMergePatch(current, patch);
    } catch (error) {
      if (error instanceof JsonPatchError) throw kubeApiError(422, error.message);
      throw error;
    }
    const next =
      options.subresource === 'status'
        ? withStatusOf(structuredClone(current), patched)
        : withStatusOf(patched, current);
    this.#stamp(next);
    return structuredClone(this.#store(next));
  }

  async delete(
    namespace: string | undefined,
    name: string,
    preconditions?: { uid?: string; resourceVersion?: string },
  ): Promise<void> {
    await this.#receive({ verb: 'delete', namespace, name });
    const current = this.#existing(namespace, name);
    const uidDiffers = preconditions?.uid !== undefined && preconditions.uid !== current.metadata?.uid;
    const versionDiffers =
      preconditions?.resourceVersion !== undefined &&
      preconditions.resourceVersion !== current.metadata?.resourceVersion;
    if (uidDiffers || versionDiffers) throw kubeApiError(409, `${name}: precondition failed`);
    this.remove(namespace, name);
  }

  async #receive(request: FakeRequest<T>): Promise<void> {
    this.requests.push(request);
    for (const { verb, interceptor } of [...this.#interceptors]) {
      if (verb === '*' || verb === request.verb) await interceptor(request);
    }
  }

  #address(object: T): { namespace: string | undefined; name: string } {
    const name = object.metadata?.name;
    if (!name) throw kubeApiError(422, `${this.kind.kind} without metadata.name`);
    return { namespace: object.metadata?.namespace, name };
  }

  #existing(namespace: string | undefined, name: string): T {
    const object = this.#objects.get(objectKey(namespace, name));
    if (!object) throw kubeApiError(404, `${this.kind.plural} "${name}" not found`);
    return object;
  }

  /** The stored object `object` replaces; 409 when `object` carries another resourceVersion. */
  #current(object: T): T {
    const { namespace, name } = this.#address(object);
    const current = this.#existing(namespace, name);
    const version = object.metadata?.resourceVersion;
    if (version !== undefined && version !== current.metadata?.resourceVersion) {
      throw kubeApiError(
        409,
        `the object has been modified; please apply your changes to the latest version`,
      );
    }
    return current;
  }

  #stamp(object: T): void {
    this.#lastVersion += 1;
    object.metadata = { ...object.metadata, resourceVersion: String(this.#lastVersion) };
  }

  #store(object: T): T {
    const key = keyOf(object);
    const change: StoreChange = this.#objects.has(key) ? 'MODIFIED' : 'ADDED';
    this.#objects.set(key, object);
    this.#notify(change, object);
    return object;
  }

  #notify(change: StoreChange, object: T): void {
    for (const watcher of this.#watchers) watcher(change, structuredClone(object));
  }
}

/** `target` with the status of `source` (none when `source` has none). */
function withStatusOf<T extends KubernetesObject>(target: T, source: T): T {
  const withStatus = target as T & { status?: unknown };
  const { status } = source as T & { status?: unknown };
  if (status === undefined) delete withStatus.status;
  else withStatus.status = structuredClone(status);
  return target;
}

/** `a=b`, `a==b` and `a!=b` requirements of a label selector (what the operator's informers use). */
function labelRequirements(selector: string | undefined): ((labels: Record<string, string>) => boolean)[] {
  if (!selector) return [];
  return selector.split(',').map((requirement) => {
    const match = /^\s*([^!=\s]+)\s*(!=|==|=)\s*(\S*)\s*$/.exec(requirement);
    if (!match) throw new Error(`FakeResourceClient: label selector ${requirement} is not supported`);
    const [, key = '', operator, value] = match;
    return operator === '!=' ? (labels) => labels[key] !== value : (labels) => labels[key] === value;
  });
}
