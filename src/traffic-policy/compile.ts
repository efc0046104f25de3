import { policyModuleInput } from '../schemas/edge-modules.js';
import { compileAction } from './actions/index.js';
import { type CompiledRule, Policy } from './compiled-policy.js';
import { PolicyError, type PolicyPath } from './errors.js';
import { compileExpression } from './expressions.js';
import type { CompiledPolicy, CompileOptions, PolicyDocument } from './types.js';
import type { Stage } from './variables.js';
import { parseAt } from './zod-issues.js';

type RuleList = ReadonlyArray<{
  name: string;
  expressions: readonly string[];
  actions: ReadonlyArray<{ type: string; config?: unknown }>;
}>;

function compileRules(
  rules: RuleList,
  direction: 'inbound' | 'outbound',
  stage: Stage,
  rateLimitNames: Map<string, PolicyPath>,
): CompiledRule[] {
  return rules.map((rule, index) => {
    const path = [direction, index];
    return {
      name: rule.name,
      path,
      conditions: rule.expressions.map((source, at) =>
        compileExpression(source, stage, [...path, 'expressions', at], 'bool'),
      ),
      actions: rule.actions.map((action, at) =>
        compileAction(action, { stage, path: [...path, 'actions', at], rateLimitNames }),
      ),
    };
  });
}

/**
 * Checks a policy module completely (shape, CEL, action configs) and returns it ready to run.
 * Throws a PolicyError naming the first bad field. Compile a policy once per change, not per
 * request: the result holds the rate limiters' counters.
 */
export function compilePolicy(module: PolicyDocument, options: CompileOptions): CompiledPolicy {
  const document = parseAt(policyModuleInput, module, []);
  const rateLimitNames = new Map<string, PolicyPath>();
  let inbound: CompiledRule[];
  let outbound: CompiledRule[] = [];
  if (options.phase === 'connection') {
    if (document.outbound && document.outbound.length > 0) {
      throw new PolicyError(
        ['outbound'],
        'must be empty or null: a TCP or TLS edge has no HTTP response for outbound rules to act on',
      );
    }
    inbound = compileRules(document.inbound, 'inbound', 'connection', rateLimitNames);
  } else {
    inbound = compileRules(document.inbound, 'inbound', 'inbound', rateLimitNames);
    outbound = compileRules(document.outbound ?? [], 'outbound', 'outbound', rateLimitNames);
  }
  const { onError, onLog } = options;
  return new Policy(options.phase, document.enabled, inbound, outbound, {
    now: options.now ?? Date.now,
    onError: (error) => {
      try {
        onError?.(error);
      } catch {
        // An error hook that throws has nowhere left to report to; the request must still go on.
      }
    },
    onLog: (entry) => onLog?.(entry),
  });
}
