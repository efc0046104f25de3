import type { KubernetesObject } from '@kubernetes/client-node';
import type { InformerReader } from '../../../src/operator/runtime/informer.js';
import { type CacheReader, ObjectCache } from '../../../src/operator/runtime/object-cache.js';
import { objectKey } from '../../../src/operator/runtime/resource-types.js';
import type { FakeResourceClient } from './resource-client.js';

/**
 * `InformerReader` over the runtime's own cache, filled by the test: `put` and `remove` are what
 * watch events would bring. `following` makes one that mirrors a `FakeResourceClient`'s store
 * as a watch with no delay would; a later `put` then shows a stale object until the next change.
 */
export class FakeInformer<T extends KubernetesObject> implements InformerReader<T> {
  readonly #cache = new ObjectCache<T>();

  constructor(objects: Iterable<T> = []) {
    for (const object of objects) this.put(object);
  }

  static following<T extends KubernetesObject>(client: FakeResourceClient<T>): FakeInformer<T> {
    const informer = new FakeInformer<T>(client.storedObjects());
    client.watch((change, object) => {
      if (change === 'DELETED') informer.remove(object.metadata?.namespace, object.metadata?.name ?? '');
      else informer.put(object);
    });
    return informer;
  }

  get cache(): CacheReader<T> {
    return this.#cache;
  }

  put(object: T): void {
    this.#cache.put(object);
  }

  remove(namespace: string | undefined, name: string): void {
    this.#cache.remove(objectKey(namespace, name));
  }
}
