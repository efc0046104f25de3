import type { ActionStep } from './actions/step.js';
import { PolicyEvaluationError, type PolicyPath } from './errors.js';
import type { CompiledExpression } from './expressions.js';
import { type RunHooks, RunState } from './run-state.js';
import type {
  CompiledPolicy,
  ConnectionResult,
  InboundResult,
  OutboundResult,
  PolicyConnection,
  PolicyPhase,
  PolicyRequest,
  PolicyResponse,
} from './types.js';

export interface CompiledRule {
  name: string;
  /** `['inbound', 2]`. */
  path: PolicyPath;
  conditions: CompiledExpression[];
  actions: ActionStep[];
}

/** Reports a runtime failure; the message says what the policy did instead. */
function report(state: RunState, path: PolicyPath, rule: string, reason: string, cause?: unknown): void {
  state.hooks.onError(
    new PolicyEvaluationError(path, rule, reason, cause === undefined ? undefined : { cause }),
  );
}

/** Every condition true (none: always). One that throws or is not a bool makes the rule not match. */
function matches(rule: CompiledRule, state: RunState): boolean {
  for (const [index, condition] of rule.conditions.entries()) {
    const path = [...rule.path, 'expressions', index];
    let value: unknown;
    try {
      value = condition.evaluate(state.vars());
    } catch (error) {
      const reason = `the expression failed, so the rule does not apply: ${(error as Error).message}`;
      report(state, path, rule.name, reason, error);
      return false;
    }
    if (typeof value !== 'boolean') {
      report(
        state,
        path,
        rule.name,
        `the expression gave ${typeof value}, not a bool, so the rule does not apply`,
      );
      return false;
    }
    if (!value) return false;
  }
  return true;
}

/** Rules in order, each matching rule's actions in order, until one is terminal. */
function run(rules: readonly CompiledRule[], state: RunState): void {
  for (const rule of rules) {
    if (!matches(rule, state)) continue;
    for (const [index, action] of rule.actions.entries()) {
      let outcome: 'continue' | 'stop';
      try {
        outcome = action(state, rule.name);
      } catch (error) {
        // Actions catch what they expect; anything else (a throwing onLog hook) skips the action.
        const reason = `the action failed and was skipped: ${(error as Error).message}`;
        report(state, [...rule.path, 'actions', index], rule.name, reason, error);
        continue;
      }
      if (outcome === 'stop') return;
    }
  }
}

function headerResult(state: RunState): OutboundResult {
  return {
    ...(state.respond ? { respond: state.respond } : {}),
    setHeaders: { ...state.setHeaders },
    removeHeaders: [...state.removeHeaders],
  };
}

const connectionOf = (request: PolicyRequest): PolicyConnection => ({
  clientIp: request.clientIp,
  clientPort: request.clientPort,
  tlsVersion: request.tlsVersion,
});

/** The runtime side of `compilePolicy`: holds the rules (and, through them, the rate limiters). */
export class Policy implements CompiledPolicy {
  constructor(
    readonly phase: PolicyPhase,
    readonly enabled: boolean,
    private readonly inboundRules: readonly CompiledRule[],
    private readonly outboundRules: readonly CompiledRule[],
    private readonly hooks: RunHooks,
  ) {}

  inbound(request: PolicyRequest): InboundResult {
    this.require('http', 'inbound');
    if (!this.enabled) return { setHeaders: {}, removeHeaders: [] };
    const state = new RunState('inbound', this.hooks, connectionOf(request), request);
    run(this.inboundRules, state);
    return { ...headerResult(state), ...(state.rewritten ? { rewrittenPath: state.requestTarget } : {}) };
  }

  outbound(request: PolicyRequest, response: PolicyResponse): OutboundResult {
    this.require('http', 'outbound');
    if (!this.enabled) return { setHeaders: {}, removeHeaders: [] };
    const state = new RunState('outbound', this.hooks, connectionOf(request), request, response);
    run(this.outboundRules, state);
    return headerResult(state);
  }

  connection(connection: PolicyConnection): ConnectionResult {
    this.require('connection', 'connection');
    if (!this.enabled) return { allowed: true };
    const state = new RunState('connection', this.hooks, connection);
    let deniedBy: string | undefined;
    for (const rule of this.inboundRules) {
      run([rule], state);
      if (state.denied) {
        deniedBy = rule.name;
        break;
      }
    }
    return deniedBy === undefined ? { allowed: true } : { allowed: false, deniedBy };
  }

  private require(phase: PolicyPhase, method: string): void {
    if (this.phase !== phase) {
      throw new Error(
        `${method}() needs a policy compiled for the '${phase}' phase; this one is '${this.phase}'`,
      );
    }
  }
}
