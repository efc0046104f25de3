import type { KubernetesObject } from '@kubernetes/client-node';
import { isConflict } from './kube-errors.js';
import type { KubeResources } from './resource-client.js';
import { sameJson } from './same-json.js';

export type WithStatus<S> = KubernetesObject & { status?: S };

export interface StatusWriteResult<T> {
  /** The object as stored after the write (or as read, when nothing changed). */
  object: T;
  /** False when the computed status equalled the stored one and no request was made. */
  written: boolean;
  /** PUTs tried (conflicts included). */
  attempts: number;
}

export interface StatusWriterOptions {
  /** Conflicts tolerated before giving up. Default 5. */
  maxAttempts?: number;
}

/**
 * Writes a CR's status through the status subresource, once per reconcile: the controller gathers
 * everything (id, conditions, derived fields) into one `compute(current) -> status` function and
 * calls `write` at the end. The PUT carries the object's resourceVersion, so a concurrent change
 * gives 409; then the object is read again and `compute` re-applied to the fresh copy (so it
 * must derive the status from its argument, e.g. via `setCondition(current.status?.conditions,
 * ...)`). An unchanged status is not written (no useless watch events and reconcile loops).
 */
export class StatusWriter {
  readonly #maxAttempts: number;

  constructor(options: StatusWriterOptions = {}) {
    this.#maxAttempts = options.maxAttempts ?? 5;
  }

  async write<S, T extends WithStatus<S>>(
    client: KubeResources<T>,
    object: T,
    compute: (current: T) => S,
  ): Promise<StatusWriteResult<T>> {
    let current = object;
    for (let attempt = 1; ; attempt++) {
      const status = compute(current);
      if (sameJson(status, current.status)) return { object: current, written: false, attempts: attempt - 1 };
      try {
        const stored = await client.replaceStatus({ ...current, status });
        return { object: stored, written: true, attempts: attempt };
      } catch (error) {
        const name = `${client.kind.kind} ${current.metadata?.namespace}/${current.metadata?.name}`;
        if (!isConflict(error)) throw new Error(`writing the status of ${name} failed`, { cause: error });
        if (attempt >= this.#maxAttempts) {
          throw new Error(`writing the status of ${name} conflicted ${attempt} times`, { cause: error });
        }
        current = await client.get(current.metadata?.namespace, current.metadata?.name ?? '');
      }
    }
  }
}
