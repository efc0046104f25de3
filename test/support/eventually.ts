/**
 * Probes until `ok` holds or `timeoutMs` passes, and returns the last value either way, so the
 * caller's assertion shows what was seen. For changes that reach the edge through its feed.
 */
export async function eventually<T>(
  probe: () => Promise<T>,
  ok: (value: T) => boolean,
  timeoutMs = 3000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (ok(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
