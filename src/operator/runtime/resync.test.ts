import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { RESYNC_PERIOD_ANNOTATION, ResyncScheduler } from './resync.js';

const object = (name: string, period?: string): KubernetesObject => ({
  metadata: { namespace: 'ns', name, annotations: period ? { [RESYNC_PERIOD_ANNOTATION]: period } : {} },
});

describe('ResyncScheduler', () => {
  it('re-enqueues every cached object once per period, each on its own jittered schedule', () => {
    const objects = [object('a'), object('b', '30s'), object('c', 'soon')];
    const enqueued: string[] = [];
    const invalid: string[] = [];
    let random = 0.5;
    const resync = new ResyncScheduler({
      list: () => objects,
      enqueue: (key) => enqueued.push(key),
      defaultPeriodMs: 600_000,
      random: () => random,
      onInvalidPeriod: (_object, value) => invalid.push(value),
    });
    resync.tick(0); // first sight: schedules, enqueues nothing
    expect(enqueued).toEqual([]);
    expect(invalid).toContain('soon');
    expect(resync.dueAt('ns/a')).toBe(600_000);
    expect(resync.dueAt('ns/b')).toBe(30_000);
    expect(resync.dueAt('ns/c')).toBe(600_000);
    resync.tick(29_999);
    expect(enqueued).toEqual([]);
    random = 1; // +10 %
    resync.tick(30_000);
    expect(enqueued).toEqual(['ns/b']);
    expect(resync.dueAt('ns/b')).toBe(63_000);
    random = 0; // -10 %
    resync.tick(600_000);
    expect(enqueued).toEqual(['ns/b', 'ns/a', 'ns/b', 'ns/c']);
    expect(resync.dueAt('ns/a')).toBe(1_140_000);
  });

  it('spreads 10,000 objects listed at once over a whole period, and keeps them spread', () => {
    const objects = Array.from({ length: 10_000 }, (_, i) => object(`o${i}`));
    const enqueuedAt: number[] = [];
    let now = 0;
    const resync = new ResyncScheduler({
      list: () => objects,
      enqueue: () => enqueuedAt.push(now),
      defaultPeriodMs: 600_000,
    });
    for (now = 0; now <= 1_800_000; now += 10_000) resync.tick(now);
    // Per minute, over the first three periods: never more than twice the even share (1,000).
    const perMinute = new Map<number, number>();
    for (const at of enqueuedAt)
      perMinute.set(Math.floor(at / 60_000), (perMinute.get(Math.floor(at / 60_000)) ?? 0) + 1);
    expect(Math.min(...enqueuedAt)).toBeGreaterThanOrEqual(300_000);
    expect(Math.max(...perMinute.values())).toBeLessThan(2000);
    // Every minute from 5 to 30 has some: a flat line, not bursts with gaps between.
    for (let minute = 6; minute < 30; minute++) expect(perMinute.get(minute) ?? 0).toBeGreaterThan(500);
  });

  it('reschedules when the annotation changes and drops objects that left the cache', () => {
    const objects = [object('a')];
    const enqueued: string[] = [];
    const resync = new ResyncScheduler({
      list: () => objects,
      enqueue: (key) => enqueued.push(key),
      random: () => 0.5,
    });
    resync.tick(0);
    objects[0] = object('a', '1m');
    resync.tick(1000);
    expect(resync.dueAt('ns/a')).toBe(61_000);
    objects.pop();
    resync.tick(2000);
    expect(resync.dueAt('ns/a')).toBeUndefined();
    resync.tick(10_000_000);
    expect(enqueued).toEqual([]);
  });

  it('does not let an annotation go below the minimum period', () => {
    const resync = new ResyncScheduler<KubernetesObject>({
      list: () => [],
      enqueue: () => {},
      minPeriodMs: 10_000,
    });
    expect(resync.periodOf(object('a', '1s'))).toBe(10_000);
    expect(resync.periodOf(object('a', '1h30m'))).toBe(5_400_000);
    expect(resync.periodOf(object('a'))).toBe(600_000);
  });
});
