import type { KubernetesObject } from '@kubernetes/client-node';
import { keyOf, objectKey } from './resource-types.js';

/** Read side of an informer's cache: what controllers use instead of GETs. */
export interface CacheReader<T extends KubernetesObject> {
  get(namespace: string | undefined, name: string): T | undefined;
  getByKey(key: string): T | undefined;
  /** Every object, or those of one namespace. */
  list(namespace?: string): T[];
  keys(): string[];
  readonly size: number;
}

/** Objects by `namespace/name`. Objects are shared, not copied: treat them as read-only. */
export class ObjectCache<T extends KubernetesObject> implements CacheReader<T> {
  readonly #objects = new Map<string, T>();

  get(namespace: string | undefined, name: string): T | undefined {
    return this.#objects.get(objectKey(namespace, name));
  }

  getByKey(key: string): T | undefined {
    return this.#objects.get(key);
  }

  list(namespace?: string): T[] {
    const all = [...this.#objects.values()];
    return namespace === undefined ? all : all.filter((object) => object.metadata?.namespace === namespace);
  }

  keys(): string[] {
    return [...this.#objects.keys()];
  }

  get size(): number {
    return this.#objects.size;
  }

  /** Stores the object; returns the one it replaced. */
  put(object: T): T | undefined {
    const key = keyOf(object);
    const previous = this.#objects.get(key);
    this.#objects.set(key, object);
    return previous;
  }

  /** Removes by key; returns what was there. */
  remove(key: string): T | undefined {
    const previous = this.#objects.get(key);
    this.#objects.delete(key);
    return previous;
  }
}
