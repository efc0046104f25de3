/**
 * A module imported at its first use instead of at start-up, once: code only a few requests need
 * (certificate parsing, the OpenAPI document) then costs the server neither memory nor start-up
 * time until then. A failed import is not cached, so the next use tries again, and it surfaces
 * naming what was being loaded, with the import's own error as its cause.
 */
export function lazyModule<T>(what: string, load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => {
    loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw new Error(`could not load ${what}`, { cause: error });
    });
    return loading;
  };
}
