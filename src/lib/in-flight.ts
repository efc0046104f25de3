/**
 * Counts work in progress (requests answered, connections carried) and tells whoever waits when
 * none is left: what a drain waits for.
 */
export class InFlight {
  #count = 0;
  readonly #idle = new Set<() => void>();

  /** One more in progress; the returned function ends it (calling it again does nothing). */
  begin(): () => void {
    this.#count++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      if (--this.#count > 0) return;
      for (const resolve of this.#idle) resolve();
      this.#idle.clear();
    };
  }

  /** Resolves once nothing is in progress. */
  idle(): Promise<void> {
    if (this.#count === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.add(resolve));
  }
}
