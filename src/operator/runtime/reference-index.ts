import type { KubernetesObject } from '@kubernetes/client-node';
import { keyOf } from './resource-types.js';

/** An object another object names: `{ kind: 'IPPolicy', namespace, name }`. */
export interface ObjectReference {
  /** The Kind (`IPPolicy`, `Secret`): references are by Kind, in practice unique across our groups. */
  kind: string;
  /** Defaults to the referrer's namespace (edgeward references stay in one namespace). */
  namespace?: string;
  name: string;
}

/** Reads the references out of a referrer's spec. */
export type ReferenceExtractor<T extends KubernetesObject> = (object: T) => ObjectReference[];

const refId = (kind: string, namespace: string | undefined, name: string) =>
  `${kind}|${namespace ?? ''}|${name}`;

/**
 * Reverse index: referenced (kind, namespace, name) -> keys of the referrers that name it, kept
 * current from the referrers' informer events, so a change to an IPPolicy or a Secret enqueues
 * exactly the TLSEdges that use it without scanning every TLSEdge.
 */
export class ReferenceIndex<T extends KubernetesObject> {
  readonly #extract: ReferenceExtractor<T>;
  /** referenced -> referrer keys */
  readonly #referrers = new Map<string, Set<string>>();
  /** referrer key -> referenced (to undo its old entries on update and delete) */
  readonly #references = new Map<string, Set<string>>();

  constructor(extract: ReferenceExtractor<T>) {
    this.#extract = extract;
  }

  /** Records (or re-records) what this referrer names now; call on add and update. */
  observe(referrer: T): void {
    const key = keyOf(referrer);
    const namespace = referrer.metadata?.namespace;
    const next = new Set(
      this.#extract(referrer).map((ref) => refId(ref.kind, ref.namespace ?? namespace, ref.name)),
    );
    const previous = this.#references.get(key) ?? new Set<string>();
    for (const id of previous) if (!next.has(id)) this.#unlink(id, key);
    for (const id of next) if (!previous.has(id)) this.#link(id, key);
    if (next.size === 0) this.#references.delete(key);
    else this.#references.set(key, next);
  }

  /** Drops a referrer (call on delete). */
  forget(referrerKey: string): void {
    for (const id of this.#references.get(referrerKey) ?? []) this.#unlink(id, referrerKey);
    this.#references.delete(referrerKey);
  }

  /** Keys of the objects that reference this one, sorted. */
  referrersOf(reference: { kind: string; namespace?: string; name: string }): string[] {
    const keys = this.#referrers.get(refId(reference.kind, reference.namespace, reference.name));
    return keys ? [...keys].sort() : [];
  }

  /** What a referrer names, as recorded. */
  referencesOf(referrerKey: string): ObjectReference[] {
    return [...(this.#references.get(referrerKey) ?? [])].map((id) => {
      const [kind = '', namespace = '', name = ''] = id.split('|');
      return namespace ? { kind, namespace, name } : { kind, name };
    });
  }

  /** Number of referenced objects tracked (for tests and metrics). */
  get size(): number {
    return this.#referrers.size;
  }

  #link(id: string, key: string): void {
    let keys = this.#referrers.get(id);
    if (!keys) {
      keys = new Set();
      this.#referrers.set(id, keys);
    }
    keys.add(key);
  }

  #unlink(id: string, key: string): void {
    const keys = this.#referrers.get(id);
    if (!keys) return;
    keys.delete(key);
    if (keys.size === 0) this.#referrers.delete(id);
  }
}
