import { createHash } from 'node:crypto';
import { Agent, type AgentEnd, type AgentOptions } from '../../../agent/agent.js';
import type { EdgeCa } from '../../../agent/edge-ca.js';
import type { ForwardTarget } from '../../../agent/forward-target.js';

/**
 * What one Tunnel's agent is to be: every option but the version, which the operator's is, and the
 * CA, which every agent shares and reads at each dial (`TunnelAgentsOptions.ca`).
 */
export type DesiredAgent = Omit<AgentOptions, 'agentVersion' | 'restart' | 'update' | 'platform' | 'ca'>;

/** What a Tunnel's agent is doing, as its status reports it. */
export type AgentState =
  | { phase: 'connecting'; edgeAddr: string; lastError?: string }
  /** Holding sessions (one per edge it reached), oldest first. */
  | { phase: 'online'; edgeAddr: string; sessionIds: string[] }
  /** Refused by the edge, or told to stop by it: not dialed again until `retryAfterMs` or a change. */
  | { phase: 'ended'; edgeAddr: string; reason: 'Refused' | 'Stopped'; message: string; at: number };

/** What `Agent` is to the supervisor (a fake in unit tests). */
export type TunnelAgent = Pick<Agent, 'start' | 'stop' | 'on' | 'done' | 'setForward'>;

export interface TunnelAgentsOptions {
  agentVersion: string;
  /**
   * What every agent trusts for the edge's certificate (`--edge-ca`): a function is asked at each
   * dial, so a new CA applies to the next connection and no running agent is restarted for it.
   */
  ca?: EdgeCa | undefined;
  /** Called whenever a Tunnel's agent state changes (session, refusal, disconnect): enqueue it. */
  onChange: (key: string) => void;
  /** Called whenever the online sessions of any key change, a stopped agent's included (`sessions()`). */
  onSessionsChange?: () => void;
  /** Whether agents may run now (not shutting down); `ensure` starts none otherwise. */
  mayRun: () => boolean;
  /**
   * How long an ended agent (refused, stopped by the edge) waits before it is dialed again: 2 s
   * after the first ending, doubling with each one in a row, up to this. Default 5 min. A refusal
   * right after a credential is made is often the edge not knowing its token yet (its feed lags
   * under load), so the first retries come soon.
   */
  retryEndedMs?: number;
  /** The first of those waits. Default 2 s. */
  firstRetryMs?: number;
  createAgent?: (options: AgentOptions) => TunnelAgent;
  now?: () => number;
}

interface Running {
  agent: TunnelAgent;
  /** Hash of the options whose change restarts the agent (the token among them: never kept as is). */
  fingerprint: string;
  /** What the last start was tried with beyond the options (the credential's generation). */
  attempt: string;
  /** Where the agent forwards now; `setForward` moves it, so the next carried connection dials the new address. */
  target: ForwardTarget;
  state: AgentState;
  /** For an ended agent: how long after its end it is dialed again. */
  retryAfterMs: number;
}

/**
 * The agents the operator runs, one per Tunnel key. `ensure` is idempotent: it starts an agent,
 * keeps a running one whose options did not change (a new forward address is dialed by the next
 * connection, not by a new session; a new CA is trusted by the next dial), or replaces it (a new
 * token, labels, edge...). Agent events update the state and call `onChange`, so the controller
 * writes status from `state(key)`.
 */
export class TunnelAgents {
  readonly #options: TunnelAgentsOptions;
  readonly #running = new Map<string, Running>();
  readonly #retryEndedMs: number;
  readonly #firstRetryMs: number;
  readonly #now: () => number;
  /** Endings in a row per key (reset by a session): the backoff's exponent. */
  readonly #endings = new Map<string, number>();

  constructor(options: TunnelAgentsOptions) {
    this.#options = options;
    this.#retryEndedMs = options.retryEndedMs ?? 5 * 60_000;
    this.#firstRetryMs = Math.min(options.firstRetryMs ?? 2_000, this.#retryEndedMs);
    this.#now = options.now ?? Date.now;
  }

  get size(): number {
    return this.#running.size;
  }

  state(key: string): AgentState | undefined {
    return this.#running.get(key)?.state;
  }

  /** The online sessions of every running agent, by key (what this replica reports to the leader). */
  sessions(): Record<string, string[]> {
    const sessions: Record<string, string[]> = {};
    for (const [key, running] of this.#running) {
      if (running.state.phase === 'online') sessions[key] = [...running.state.sessionIds];
    }
    return sessions;
  }

  /** The address the key's agent dials for carried connections now. */
  forwardOf(key: string): { host: string; port: number } | undefined {
    const target = this.#running.get(key)?.target;
    return target && { host: target.host, port: target.port };
  }

  /** For an ended agent: how long until `ensure` dials again (0: it will now). */
  retryInMs(key: string): number | undefined {
    const state = this.state(key);
    if (state?.phase !== 'ended') return undefined;
    return Math.max(0, state.at + (this.#running.get(key)?.retryAfterMs ?? 0) - this.#now());
  }

  /**
   * Brings the key's agent to `desired`; `attempt` is anything else whose change should retry an
   * ended agent at once. Returns the state, or undefined when agents may not run here now.
   */
  ensure(key: string, desired: DesiredAgent, attempt = ''): AgentState | undefined {
    if (!this.#options.mayRun()) {
      this.stop(key);
      return undefined;
    }
    const fingerprint = fingerprintOf(desired);
    const running = this.#running.get(key);
    if (running && running.fingerprint === fingerprint) {
      running.target = { ...desired.forward };
      running.agent.setForward(running.target);
      const retry =
        running.state.phase === 'ended' && (running.attempt !== attempt || this.retryInMs(key) === 0);
      if (!retry) return running.state;
    }
    this.#stopAgent(key);
    return this.#start(key, desired, fingerprint, attempt).state;
  }

  /** Stops the key's agent (its session ends at the edge) and forgets its backoff. */
  stop(key: string, options: { graceful?: boolean } = {}): void {
    this.#endings.delete(key);
    this.#stopAgent(key, options.graceful);
  }

  #stopAgent(key: string, graceful = false): void {
    const running = this.#running.get(key);
    if (!running) return;
    this.#running.delete(key);
    running.agent.stop({ graceful });
    if (running.state.phase === 'online') this.#options.onSessionsChange?.();
  }

  /** Stops every agent gracefully (the replica is shutting down): requests in flight finish. */
  stopAll(): void {
    for (const key of [...this.#running.keys()]) this.stop(key, { graceful: true });
  }

  #start(key: string, desired: DesiredAgent, fingerprint: string, attempt: string): Running {
    const target: ForwardTarget = { ...desired.forward };
    const create = this.#options.createAgent ?? ((options: AgentOptions) => new Agent(options));
    // `restart` commands reconnect in this process; no update directory: updates are refused (the
    // operator is updated as a whole, by its image).
    const { ca, agentVersion } = this.#options;
    const agent = create({ ...desired, forward: target, agentVersion, ...(ca === undefined ? {} : { ca }) });
    const { edgeAddr } = desired;
    const running: Running = {
      agent,
      fingerprint,
      attempt,
      target,
      state: { phase: 'connecting', edgeAddr },
      retryAfterMs: 0,
    };
    const update = (state: AgentState) => {
      if (this.#running.get(key) !== running) return; // replaced or stopped meanwhile
      const sessionsChanged =
        running.state.phase === 'online' || state.phase === 'online'
          ? !sameSessions(running.state, state)
          : false;
      running.state = state;
      this.#options.onChange(key);
      if (sessionsChanged) this.#options.onSessionsChange?.();
    };
    const online = () => (running.state.phase === 'online' ? running.state.sessionIds : []);
    agent.on('session', (sessionId) => {
      this.#endings.delete(key);
      update({
        phase: 'online',
        edgeAddr,
        sessionIds: [...online().filter((id) => id !== sessionId), sessionId],
      });
    });
    // An agent holding sessions on several edges loses one: the others carry on.
    agent.on('sessionClosed', (sessionId, reason) => {
      const left = online().filter((id) => id !== sessionId);
      if (left.length > 0) update({ phase: 'online', edgeAddr, sessionIds: left });
      else if (running.state.phase === 'online') update({ phase: 'connecting', edgeAddr, lastError: reason });
    });
    agent.on('disconnected', (reason) => update({ phase: 'connecting', edgeAddr, lastError: reason }));
    void agent.done.then((end: AgentEnd) => {
      if (end.reason === 'stopped') return;
      const message =
        end.reason === 'refused'
          ? end.message
          : end.reason === 'stop-command'
            ? 'the edge sent a stop command'
            : 'the edge sent a restart command';
      if (this.#running.get(key) === running) {
        const endings = (this.#endings.get(key) ?? 0) + 1;
        this.#endings.set(key, endings);
        running.retryAfterMs = Math.min(this.#retryEndedMs, this.#firstRetryMs * 2 ** (endings - 1));
      }
      update({
        phase: 'ended',
        edgeAddr,
        reason: end.reason === 'refused' ? 'Refused' : 'Stopped',
        message,
        at: this.#now(),
      });
    });
    this.#running.set(key, running);
    agent.start();
    return running;
  }
}

function sameSessions(a: AgentState, b: AgentState): boolean {
  const left = a.phase === 'online' ? a.sessionIds : [];
  const right = b.phase === 'online' ? b.sessionIds : [];
  return left.length === right.length && left.every((id, index) => id === right[index]);
}

/** A hash of the options but the forward address (the token is in them: only its hash is kept). */
function fingerprintOf(desired: DesiredAgent): string {
  const { forward, ...rest } = desired;
  const text = JSON.stringify({
    ...rest,
    labels: Object.fromEntries(Object.entries(desired.labels).sort(([a], [b]) => a.localeCompare(b))),
    protocol: forward.protocol,
  });
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
