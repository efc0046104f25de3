/** A create whose answer never arrived: what it sent, so it can be sent again exactly. */
export interface UnconfirmedCreate<T, R> {
  /** The key given to the sync (the server replays it only for the same body, so the body must match). */
  key: string;
  object: T;
  resolved: R;
}

/**
 * What this process knows about its own creates that the informer cache may not show yet, by
 * object uid:
 * - unconfirmed creates (the request went out, no answer came back): the server may have made the
 *   resource. Resending the same request under the same key replays it, so it is found and
 *   adopted even when the spec changed meanwhile (a new spec means a new body and key, which
 *   alone would make a second resource and orphan the first);
 * - ids written to status that the cache has not shown yet: only then is a live read needed to
 *   avoid a second create, so the usual first reconcile of a new object costs no extra GET.
 * Kept in memory: a restart starts from caches listed after every earlier write. An unconfirmed
 * create does not survive a restart: only an unchanged request finds its resource then.
 */
export class CreateMemory<T, R> {
  readonly #unconfirmed = new Map<string, UnconfirmedCreate<T, R>>();
  readonly #recorded = new Map<string, string>();

  unconfirmed(uid: string | undefined): UnconfirmedCreate<T, R> | undefined {
    return uid ? this.#unconfirmed.get(uid) : undefined;
  }

  /** One per object: no other create is sent for it until this one is resent and answered. */
  rememberUnconfirmed(uid: string | undefined, create: UnconfirmedCreate<T, R>): void {
    if (uid) this.#unconfirmed.set(uid, create);
  }

  confirmed(uid: string | undefined): void {
    if (uid) this.#unconfirmed.delete(uid);
  }

  /** An id this process wrote to the object's status. */
  recorded(uid: string | undefined, id: string): void {
    if (uid) this.#recorded.set(uid, id);
  }

  /** The id written to status that a cached copy without status.id has not caught up with. */
  recordedId(uid: string | undefined): string | undefined {
    return uid ? this.#recorded.get(uid) : undefined;
  }

  /** The cache shows the object's id (or the object is gone): nothing left to catch up with. */
  caughtUp(uid: string | undefined): void {
    if (uid) this.#recorded.delete(uid);
  }

  forget(uid: string | undefined): void {
    if (!uid) return;
    this.#unconfirmed.delete(uid);
    this.#recorded.delete(uid);
  }
}
