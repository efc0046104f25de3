/**
 * A value loaded on first use and kept for `ttlMs`; a failed load is forgotten at once, so the
 * next request tries again rather than repeating the failure for the whole period.
 */
export function cached<T>(load: () => Promise<T>, ttlMs: number): () => Promise<T> {
  let entry: { value: Promise<T>; loadedAt: number } | undefined;
  return () => {
    const at = Date.now();
    if (!entry || at - entry.loadedAt > ttlMs) {
      const value = load();
      const current = { value, loadedAt: at };
      entry = current;
      value.catch(() => {
        if (entry === current) entry = undefined;
      });
    }
    return entry.value;
  };
}
