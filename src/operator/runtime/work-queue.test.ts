import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RateLimiter } from './rate-limiter.js';
import { WorkQueue } from './work-queue.js';

const unlimited = () => new RateLimiter({ qps: 0, burst: 1 });

/** Resolves with the key if `get()` hands one out before pending promises settle, else 'pending'. */
async function poll(promise: Promise<string | undefined>): Promise<string | undefined | 'pending'> {
  return Promise.race([promise, new Promise<'pending'>((resolve) => setImmediate(() => resolve('pending')))]);
}

describe('WorkQueue', () => {
  it('holds a key once however often it is added', async () => {
    const queue = new WorkQueue({ limiter: unlimited() });
    queue.add('ns/a');
    queue.add('ns/a');
    queue.add('ns/b');
    queue.add('ns/a');
    expect(queue.length).toBe(2);
    expect(await queue.get()).toBe('ns/a');
    expect(await queue.get()).toBe('ns/b');
    expect(queue.length).toBe(0);
  });

  it('never hands out a key being processed; one added meanwhile comes back after done()', async () => {
    const queue = new WorkQueue({ limiter: unlimited() });
    queue.add('ns/a');
    expect(await queue.get()).toBe('ns/a');
    queue.add('ns/a'); // changed while running
    queue.add('ns/a');
    expect(queue.length).toBe(0);
    const next = queue.get();
    expect(await poll(next)).toBe('pending');
    queue.add('ns/b');
    expect(await next).toBe('ns/b');
    const third = queue.get();
    expect(await poll(third)).toBe('pending');
    queue.done('ns/a');
    expect(await third).toBe('ns/a');
    queue.done('ns/a');
    queue.done('ns/b');
    expect(await poll(queue.get())).toBe('pending');
  });

  it('runs no key twice at once under concurrent workers with keys re-added while they run', async () => {
    const queue = new WorkQueue({ limiter: unlimited() });
    const running = new Set<string>();
    const runs = new Map<string, number>();
    let overlaps = 0;
    const worker = async () => {
      for (let key = await queue.get(); key !== undefined; key = await queue.get()) {
        if (running.has(key)) overlaps += 1;
        running.add(key);
        runs.set(key, (runs.get(key) ?? 0) + 1);
        await new Promise((resolve) => setTimeout(resolve, 1 + (key.length % 3)));
        if ((runs.get(key) ?? 0) < 3) queue.add(key); // changes while processing
        running.delete(key);
        queue.done(key);
      }
    };
    const workers = Array.from({ length: 8 }, worker);
    for (let round = 0; round < 5; round++) for (const key of ['a', 'bb', 'ccc', 'dd', 'e']) queue.add(key);
    while ([...runs.values()].reduce((sum, count) => sum + count, 0) < 15 || queue.processingCount > 0) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    queue.shutDown();
    await Promise.all(workers);
    expect(overlaps).toBe(0);
    expect(Object.fromEntries(runs)).toEqual({ a: 3, bb: 3, ccc: 3, dd: 3, e: 3 });
  });

  describe('with fake timers', () => {
    beforeEach(() => {
      vi.useFakeTimers({ now: 1_000_000 });
    });
    afterEach(() => {
      vi.useRealTimers();
    });

    it('backs off per key exponentially from 1 s, capped at 5 min, and forget() resets it', () => {
      const queue = new WorkQueue({ limiter: unlimited(), random: () => 0 });
      const steps = Array.from({ length: 12 }, () => queue.backoffMs('ns/a'));
      expect(steps).toEqual([
        1000, 2000, 4000, 8000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000, 300_000, 300_000,
      ]);
      expect(queue.failures('ns/a')).toBe(12);
      expect(queue.backoffMs('ns/b')).toBe(1000); // per key
      queue.forget('ns/a');
      expect(queue.failures('ns/a')).toBe(0);
      expect(queue.backoffMs('ns/a')).toBe(1000);
    });

    it('jitters each step down by up to 20 %', () => {
      const queue = new WorkQueue({ limiter: unlimited(), random: () => 1 });
      expect([queue.backoffMs('k'), queue.backoffMs('k'), queue.backoffMs('k')]).toEqual([800, 1600, 3200]);
      const cap = new WorkQueue({ limiter: unlimited(), random: () => 0.5, backoff: { maxMs: 10_000 } });
      for (let step = 0; step < 10; step++) cap.backoffMs('k');
      expect(cap.backoffMs('k')).toBe(9000);
    });

    it('addRateLimited makes the key available only after its backoff', async () => {
      const queue = new WorkQueue({ limiter: unlimited(), random: () => 0 });
      expect(queue.addRateLimited('ns/a')).toBe(1000);
      expect(queue.length).toBe(0);
      expect(queue.delayedCount).toBe(1);
      vi.advanceTimersByTime(999);
      expect(queue.length).toBe(0);
      vi.advanceTimersByTime(1);
      expect(queue.length).toBe(1);
      const key = await queue.get();
      queue.done(key ?? '');
      expect(queue.addRateLimited('ns/a')).toBe(2000);
      vi.advanceTimersByTime(1999);
      expect(queue.length).toBe(0);
      vi.advanceTimersByTime(1);
      expect(queue.length).toBe(1);
    });

    it('addAfter keeps the earliest of two delayed adds of one key', () => {
      const queue = new WorkQueue({ limiter: unlimited() });
      queue.addAfter('k', 5000);
      queue.addAfter('k', 1000);
      queue.addAfter('k', 3000);
      expect(queue.delayedCount).toBe(1);
      vi.advanceTimersByTime(1000);
      expect(queue.length).toBe(1);
      vi.advanceTimersByTime(10_000);
      expect(queue.length).toBe(1);
    });

    it('cancelDelayed drops a pending delayed add of that key only', () => {
      const queue = new WorkQueue({ limiter: unlimited() });
      queue.addAfter('k', 10_000);
      queue.addAfter('other', 10_000);
      queue.cancelDelayed('k');
      queue.cancelDelayed('never-added');
      expect(queue.delayedCount).toBe(1);
      vi.advanceTimersByTime(10_000);
      expect(queue.length).toBe(1);
    });

    it('spreads rate-limited adds of many keys by the global token bucket', () => {
      // 10 qps, burst 2; backoff of 1 ms so the bucket decides.
      const limiter = new RateLimiter({ qps: 10, burst: 2 });
      const queue = new WorkQueue({ limiter, random: () => 0, backoff: { baseMs: 1 } });
      const delays = ['a', 'b', 'c', 'd', 'e'].map((key) => queue.addRateLimited(key));
      expect(delays).toEqual([1, 1, 100, 200, 300]);
      vi.advanceTimersByTime(1);
      expect(queue.length).toBe(2);
      vi.advanceTimersByTime(99);
      expect(queue.length).toBe(3);
      vi.advanceTimersByTime(200);
      expect(queue.length).toBe(5);
    });
  });

  it('shutDown releases waiting workers, drops queued keys, and idle() waits for keys in flight', async () => {
    const queue = new WorkQueue({ limiter: unlimited() });
    queue.add('a');
    const key = await queue.get();
    queue.add('b');
    queue.addAfter('c', 60_000);
    const waiting = [queue.get()];
    expect(await waiting[0]).toBe('b');
    const blocked = queue.get();
    queue.shutDown();
    expect(await blocked).toBeUndefined();
    expect(await queue.get()).toBeUndefined();
    expect(queue.delayedCount).toBe(0);
    queue.add('d');
    expect(queue.length).toBe(0);
    let idle = false;
    const idlePromise = queue.idle().then(() => {
      idle = true;
    });
    queue.done(key ?? '');
    await new Promise((resolve) => setImmediate(resolve));
    expect(idle).toBe(false); // 'b' is still processing
    queue.done('b');
    await idlePromise;
    expect(idle).toBe(true);
  });
});
