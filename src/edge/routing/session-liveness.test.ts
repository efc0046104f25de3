import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SESSION_LIVENESS } from '../../schemas/tunnel-protocol.js';
import { type LivenessProbe, livenessBounds, SessionLiveness } from './session-liveness.js';

/** An agent under test: answers pings (or not) and sends bytes when told. */
class FakeAgent implements LivenessProbe {
  answering = true;
  bytes = 0;
  pings = 0;
  readonly #unanswered: Array<() => void> = [];

  received = (): number => this.bytes;

  ping = (): Promise<void> => {
    this.pings++;
    return new Promise((resolve) => {
      if (this.answering) setTimeout(resolve, 5);
      else this.#unanswered.push(resolve);
    });
  };

  /** Answers the pings it kept waiting (a frozen agent thawed). */
  thaw(): void {
    this.answering = true;
    for (const answer of this.#unanswered.splice(0)) answer();
  }
}

/** How long the session stayed in rotation after `freeze` ran, and when it was declared dead. */
async function freezeAndWatch(liveness: SessionLiveness, freeze: () => void, limitMs: number) {
  const frozenAt = Date.now();
  freeze();
  let leftAfterMs: number | undefined;
  let deadAfterMs: number | undefined;
  liveness.on('rotation', (inRotation) => {
    if (!inRotation) leftAfterMs ??= Date.now() - frozenAt;
  });
  liveness.on('dead', () => {
    deadAfterMs ??= Date.now() - frozenAt;
  });
  for (let elapsed = 0; elapsed < limitMs && deadAfterMs === undefined; elapsed += 100) {
    await vi.advanceTimersByTimeAsync(100);
  }
  return { leftAfterMs, deadAfterMs };
}

beforeEach(() => {
  vi.useFakeTimers({
    toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'Date'],
  });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('session liveness', () => {
  it('the defaults take a frozen agent out of rotation within 15 s and close it soon after', async () => {
    const bounds = livenessBounds();
    expect(bounds.outOfRotationMs).toBeLessThanOrEqual(15_000);
    // Frozen at every phase of the ping interval: right after an answer is the worst moment (the
    // silence starts longest before the next ping), then the checks' own period adds to it.
    for (let phaseMs = 0; phaseMs < SESSION_LIVENESS.intervalMs; phaseMs += 250) {
      const agent = new FakeAgent();
      const liveness = new SessionLiveness(agent);
      await vi.advanceTimersByTimeAsync(SESSION_LIVENESS.intervalMs + 10 + phaseMs);
      expect(liveness.inRotation).toBe(true);
      const { leftAfterMs, deadAfterMs } = await freezeAndWatch(
        liveness,
        () => {
          agent.answering = false;
        },
        60_000,
      );
      expect(leftAfterMs, `frozen ${phaseMs} ms into an interval`).toBeLessThanOrEqual(
        bounds.outOfRotationMs,
      );
      expect(deadAfterMs, `frozen ${phaseMs} ms into an interval`).toBeLessThanOrEqual(bounds.closedMs);
      expect(deadAfterMs).toBeGreaterThan(leftAfterMs ?? Number.POSITIVE_INFINITY);
      expect(liveness.inRotation).toBe(false);
    }
  });

  it('keeps an answering agent in rotation, pinging it every interval', async () => {
    const agent = new FakeAgent();
    const liveness = new SessionLiveness(agent, { intervalMs: 1000, overdueMs: 500, timeoutMs: 2000 });
    const changes: boolean[] = [];
    liveness.on('rotation', (inRotation) => changes.push(inRotation));
    await vi.advanceTimersByTimeAsync(30_000);
    expect(agent.pings).toBe(30);
    expect(changes).toEqual([]);
    expect(liveness.inRotation).toBe(true);
    liveness.stop();
  });

  it('an overdue agent rejoins rotation when it answers again, before it is declared dead', async () => {
    const agent = new FakeAgent();
    const liveness = new SessionLiveness(agent, { intervalMs: 1000, overdueMs: 500, timeoutMs: 5000 });
    const changes: boolean[] = [];
    liveness.on('rotation', (inRotation) => changes.push(inRotation));
    agent.answering = false;
    await vi.advanceTimersByTimeAsync(2000);
    expect(liveness.inRotation).toBe(false);
    agent.thaw();
    await vi.advanceTimersByTimeAsync(100);
    expect(liveness.inRotation).toBe(true);
    expect(changes).toEqual([false, true]);
    liveness.stop();
  });

  it('bytes from the agent count as life even while its pings go unanswered (a saturated link)', async () => {
    const agent = new FakeAgent();
    agent.answering = false;
    const liveness = new SessionLiveness(agent, { intervalMs: 1000, overdueMs: 500, timeoutMs: 2000 });
    const dead: string[] = [];
    liveness.on('dead', (reason) => dead.push(reason));
    for (let step = 0; step < 100; step++) {
      agent.bytes += 1000;
      await vi.advanceTimersByTimeAsync(100);
    }
    expect(liveness.inRotation).toBe(true);
    expect(dead).toEqual([]);
    // The bytes stop: out of rotation, then dead.
    await vi.advanceTimersByTimeAsync(1600);
    expect(liveness.inRotation).toBe(false);
    await vi.advanceTimersByTimeAsync(1500);
    expect(dead).toEqual([expect.stringMatching(/^heard nothing for 3(\.\d)? s$/)]);
  });

  it('a suspect session leaves rotation at once, pings the agent, and rejoins on that answer only', async () => {
    const agent = new FakeAgent();
    const liveness = new SessionLiveness(agent, { intervalMs: 1000, overdueMs: 500, timeoutMs: 2000 });
    await vi.advanceTimersByTimeAsync(1010);
    expect(agent.pings).toBe(1);
    agent.answering = false;
    await vi.advanceTimersByTimeAsync(990); // the second ping is sent, unanswered
    liveness.markSuspect('an upstream connection failed');
    expect(liveness.inRotation).toBe(false);
    expect(liveness.outOfRotationReason).toBe('an upstream connection failed');
    expect(agent.pings).toBe(3);
    agent.thaw();
    await vi.advanceTimersByTimeAsync(10);
    expect(liveness.inRotation).toBe(true);
    liveness.stop();
  });

  it('without pings of its own (SSH keepalives), bytes after the mark clear a suspect session', async () => {
    let bytes = 0;
    const liveness = new SessionLiveness(
      { received: () => bytes },
      { intervalMs: 1000, overdueMs: 500, timeoutMs: 2000 },
    );
    bytes = 10; // arrived before the mark, not yet looked at
    liveness.markSuspect('an upstream connection failed');
    await vi.advanceTimersByTimeAsync(600);
    expect(liveness.inRotation).toBe(false);
    bytes = 20;
    await vi.advanceTimersByTimeAsync(600);
    expect(liveness.inRotation).toBe(true);
    liveness.stop();
  });

  it('is out of rotation once stopped, and says nothing more', async () => {
    const agent = new FakeAgent();
    const liveness = new SessionLiveness(agent, { intervalMs: 1000, overdueMs: 500, timeoutMs: 2000 });
    const events: unknown[] = [];
    liveness.on('rotation', (inRotation) => events.push(inRotation));
    liveness.on('dead', (reason) => events.push(reason));
    liveness.stop();
    expect(liveness.inRotation).toBe(false);
    agent.answering = false;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(events).toEqual([]);
    expect(agent.pings).toBe(0);
  });
});
