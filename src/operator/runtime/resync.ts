import type { KubernetesObject } from '@kubernetes/client-node';
import { parseDuration } from './duration.js';
import { keyOf } from './resource-types.js';

export const RESYNC_PERIOD_ANNOTATION = 'edgeward.dev/resync-period';

export interface ResyncOptions<T extends KubernetesObject> {
  /** The objects to resync: an informer cache's `list`. */
  list: () => T[];
  enqueue: (key: string) => void;
  /** Default 10 min. */
  defaultPeriodMs?: number;
  /** Shortest period an annotation may ask for. Default 10 s. */
  minPeriodMs?: number;
  /** Each period is stretched or shrunk at random by up to this fraction. Default 0.1. */
  jitter?: number;
  /** How often due times are checked. Default 1 s. */
  tickMs?: number;
  /** Told about annotations that do not parse (to log them); the default period applies. */
  onInvalidPeriod?: (object: T, value: string) => void;
  random?: () => number;
}

/**
 * Jittered periodic resync: every cached object is enqueued again about once per period (10 min
 * by default, or the duration in its `edgeward.dev/resync-period` annotation), each on its own
 * schedule, first spread over a whole period, so a thousand objects do not resync at once. This is how drift on the server is
 * found and repaired. Objects leave the schedule when they leave the cache.
 */
export class ResyncScheduler<T extends KubernetesObject> {
  readonly #options: ResyncOptions<T>;
  readonly #due = new Map<string, { at: number; periodMs: number }>();
  #timer: NodeJS.Timeout | undefined;

  constructor(options: ResyncOptions<T>) {
    this.#options = options;
  }

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => this.tick(), this.#options.tickMs ?? 1000);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** The period that applies to an object. */
  periodOf(object: T): number {
    const fallback = this.#options.defaultPeriodMs ?? 600_000;
    const value = object.metadata?.annotations?.[RESYNC_PERIOD_ANNOTATION];
    if (value === undefined) return fallback;
    const parsed = parseDuration(value);
    if (parsed === undefined) {
      this.#options.onInvalidPeriod?.(object, value);
      return fallback;
    }
    return Math.max(parsed, this.#options.minPeriodMs ?? 10_000);
  }

  /** When an object is next due (ms since the epoch), once it has been seen. */
  dueAt(key: string): number | undefined {
    return this.#due.get(key)?.at;
  }

  /** Enqueues every object whose time has come; schedules objects seen for the first time. */
  tick(now: number = Date.now()): void {
    const seen = new Set<string>();
    for (const object of this.#options.list()) {
      const key = keyOf(object);
      seen.add(key);
      const periodMs = this.periodOf(object);
      const due = this.#due.get(key);
      if (!due || due.periodMs !== periodMs) {
        // New here, or its annotation changed: the first resync falls anywhere in half a period to
        // one and a half, so 10,000 objects listed at once resync spread over a whole period (with
        // the ±10 % of later periods alone they would all come due within 2 of 10 minutes).
        this.#due.set(key, { at: now + Math.round(periodMs * (0.5 + this.#random())), periodMs });
      } else if (now >= due.at) {
        this.#options.enqueue(key);
        this.#due.set(key, { at: now + this.#jittered(periodMs), periodMs });
      }
    }
    for (const key of this.#due.keys()) if (!seen.has(key)) this.#due.delete(key);
  }

  #jittered(periodMs: number): number {
    const jitter = this.#options.jitter ?? 0.1;
    return Math.round(periodMs * (1 + jitter * (2 * this.#random() - 1)));
  }

  #random(): number {
    return (this.#options.random ?? Math.random)();
  }
}
