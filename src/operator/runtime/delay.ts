/**
 * Waits `ms`; rejects with the signal's reason when it aborts. Built on the global setTimeout (not
 * node:timers/promises) so tests can drive it with fake timers.
 */
export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Waits `ms`; resolves false (instead of rejecting) when the signal aborts first. */
export async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await delay(ms, signal);
    return true;
  } catch {
    return false;
  }
}
