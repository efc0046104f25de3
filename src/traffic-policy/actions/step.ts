import type { PolicyPath } from '../errors.js';
import type { RunState } from '../run-state.js';
import type { Stage } from '../variables.js';

/** `stop` ends the evaluation: a terminal action (a reply, a refused connection) ran. */
export type Outcome = 'continue' | 'stop';

/** One compiled action; `rule` names the rule it belongs to, for errors and logs. */
export type ActionStep = (state: RunState, rule: string) => Outcome;

export interface ActionSite {
  stage: Stage;
  /** The action's place, e.g. `['inbound', 0, 'actions', 1]`; its config is under `config`. */
  path: PolicyPath;
  /** Rate-limit names already taken in this policy, and where. */
  rateLimitNames: Map<string, PolicyPath>;
}

/** Validates `config` (null reads as `{}`) and returns the action, or throws a PolicyError. */
export type ActionCompiler = (config: unknown, site: ActionSite) => ActionStep;

export const configPath = (site: ActionSite): PolicyPath => [...site.path, 'config'];
