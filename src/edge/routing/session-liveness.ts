import { EventEmitter } from 'node:events';
import { SESSION_LIVENESS, type SessionLivenessSettings } from '../../schemas/tunnel-protocol.js';

/** How a transport shows that the agent at the other end is alive. */
export interface LivenessProbe {
  /** Bytes received from the agent so far: any new byte is a sign of life. */
  received(): number;
  /**
   * Asks the agent for an answer now (an HTTP/2 PING) and resolves when it comes. Absent when the
   * transport pings by itself: ssh2 sends a keepalive after `intervalMs` without a packet.
   */
  ping?(): Promise<void>;
}

/** The settings given, completed with the defaults. */
export function resolveLiveness(settings: Partial<SessionLivenessSettings> = {}): SessionLivenessSettings {
  return { ...SESSION_LIVENESS, ...settings };
}

/** How often the silence is judged (and bytes counted): half the shorter of the interval and the grace. */
function checkPeriodMs({ intervalMs, overdueMs }: SessionLivenessSettings): number {
  return Math.max(1, Math.min(intervalMs, overdueMs) / 2);
}

/**
 * The longest a session stays in rotation, and open, after its agent's last sign of life (the
 * defaults: 9.5 s and 16.5 s).
 */
export function livenessBounds(settings: Partial<SessionLivenessSettings> = {}): {
  outOfRotationMs: number;
  closedMs: number;
} {
  const resolved = resolveLiveness(settings);
  const { intervalMs, overdueMs, timeoutMs } = resolved;
  const periodMs = checkPeriodMs(resolved);
  return { outOfRotationMs: intervalMs + overdueMs + periodMs, closedMs: intervalMs + timeoutMs + periodMs };
}

/** `1.5 s`, for reasons people read. */
function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

/**
 * Watches one session's agent. Pings it every `intervalMs` (when the transport lets us) and judges
 * by silence: having heard nothing — no ping answered, no byte — for `intervalMs + overdueMs`, the
 * session is out of rotation; for `intervalMs + timeoutMs`, it is `dead` (its owner closes it).
 * A session marked suspect (a stream of it failed) is out of rotation until the agent shows it is
 * alive after the mark. Emits `rotation` when the session leaves or rejoins rotation.
 *
 * Bytes are counted, and the silence judged, every half of the shorter of `intervalMs` and
 * `overdueMs` (see `livenessBounds`).
 */
export class SessionLiveness extends EventEmitter<{
  rotation: [inRotation: boolean];
  dead: [reason: string];
}> {
  readonly settings: SessionLivenessSettings;
  #heardAt = Date.now();
  #received: number;
  #overdue = false;
  /** Why and since when the session is suspect, and how many bytes it had received by then. */
  #suspect: { reason: string; since: number; received: number } | undefined;
  #pingsInFlight = 0;
  #stopped = false;
  readonly #pingTimer: NodeJS.Timeout | undefined;
  readonly #checkTimer: NodeJS.Timeout;

  constructor(
    private readonly probe: LivenessProbe,
    settings: Partial<SessionLivenessSettings> = {},
  ) {
    super();
    this.settings = resolveLiveness(settings);
    this.#received = probe.received();
    if (probe.ping) {
      this.#pingTimer = setInterval(() => {
        if (this.#pingsInFlight === 0) this.#ping();
      }, this.settings.intervalMs);
      this.#pingTimer.unref();
    }
    // Judged after the event loop has read what arrived meanwhile: after a stall of the edge (a
    // long pause, a starved CPU) the agents' answers are in the sockets, not yet counted.
    this.#checkTimer = setInterval(() => setImmediate(() => this.#check()), checkPeriodMs(this.settings));
    this.#checkTimer.unref();
  }

  /** Whether new connections and requests may go to the session. */
  get inRotation(): boolean {
    return !this.#stopped && !this.#overdue && this.#suspect === undefined;
  }

  /** Why the session is out of rotation, if it is. */
  get outOfRotationReason(): string | undefined {
    if (this.#stopped) return 'closed';
    if (this.#overdue) return `no answer for ${seconds(Date.now() - this.#heardAt)}`;
    return this.#suspect?.reason;
  }

  /**
   * Takes the session out of rotation until the agent shows it is alive (a ping sent from now on
   * answered, or bytes received), or it is closed.
   */
  markSuspect(reason: string): void {
    if (this.#stopped || this.#suspect) return;
    const wasInRotation = this.inRotation;
    this.#suspect = { reason, since: Date.now(), received: this.probe.received() };
    if (wasInRotation) this.emit('rotation', false);
    this.#ping();
  }

  /** The session is closed: no more pings, no more judgements. */
  stop(): void {
    this.#stopped = true;
    clearInterval(this.#pingTimer);
    clearInterval(this.#checkTimer);
  }

  #ping(): void {
    const ping = this.probe.ping;
    if (!ping || this.#stopped) return;
    const sentAt = Date.now();
    this.#pingsInFlight++;
    ping().then(
      () => {
        this.#pingsInFlight--;
        this.#heard(this.#suspect !== undefined && sentAt >= this.#suspect.since);
      },
      () => {
        // The session is closing (its transport cancels pending pings); its `closed` says why.
        this.#pingsInFlight--;
      },
    );
  }

  /** A sign of life; `clearsSuspicion` when it came after the session was marked suspect. */
  #heard(clearsSuspicion: boolean): void {
    if (this.#stopped) return;
    this.#heardAt = Date.now();
    const wasInRotation = this.inRotation;
    this.#overdue = false;
    if (clearsSuspicion) this.#suspect = undefined;
    if (!wasInRotation && this.inRotation) this.emit('rotation', true);
  }

  #check(): void {
    if (this.#stopped) return;
    const received = this.probe.received();
    if (received !== this.#received) {
      this.#received = received;
      this.#heard(this.#suspect !== undefined && received > this.#suspect.received);
    }
    const silentMs = Date.now() - this.#heardAt;
    const { intervalMs, overdueMs, timeoutMs } = this.settings;
    if (silentMs >= intervalMs + timeoutMs) {
      this.stop();
      this.emit('dead', `heard nothing for ${seconds(silentMs)}`);
      return;
    }
    if (!this.#overdue && silentMs >= intervalMs + overdueMs) {
      const wasInRotation = this.inRotation;
      this.#overdue = true;
      if (wasInRotation) this.emit('rotation', false);
    }
  }
}
