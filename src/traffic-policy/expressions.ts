import type { ASTNode, ParseResult } from '@marcbachmann/cel-js';
import { PolicyError, type PolicyPath } from './errors.js';
import { type Activation, environmentFor, type Stage, variableNames } from './variables.js';

/** A CEL expression parsed and type-checked against its stage's variables. */
export interface CompiledExpression {
  source: string;
  /** Throws what CEL throws (a missing map key, a division by zero). */
  evaluate(vars: Activation): unknown;
}

const STAGE_NAMES: Record<Stage, string> = {
  inbound: 'an inbound HTTP rule',
  outbound: 'an outbound HTTP rule',
  connection: "a TCP or TLS edge's rule (it acts on connections)",
};

interface CelError {
  summary?: string;
  message: string;
  code?: string;
  range?: { start: number };
}

function describeCelError(error: CelError, stage: Stage): string {
  const summary = error.summary ?? error.message.split('\n')[0] ?? 'invalid expression';
  const at = error.range ? ` at column ${error.range.start + 1}` : '';
  const hint =
    error.code === 'unknown_variable' || error.code === 'no_such_key'
      ? `; ${STAGE_NAMES[stage]} can use ${variableNames(stage).join(', ')}`
      : '';
  return `${summary}${at}${hint}`;
}

/**
 * `want: 'bool'` for rule expressions (they select traffic); `'any'` for values such as a rate
 * limit's bucket key. Throws a PolicyError at `path` for syntax, unknown names, type errors and
 * regular expressions given to `matches()` that do not compile.
 */
export function compileExpression(
  source: string,
  stage: Stage,
  path: PolicyPath,
  want: 'bool' | 'any',
): CompiledExpression {
  let parsed: ParseResult;
  try {
    parsed = environmentFor(stage).parse(source);
  } catch (error) {
    throw new PolicyError(path, `invalid CEL: ${describeCelError(error as CelError, stage)}`, {
      cause: error,
    });
  }
  const checked = parsed.check();
  if (!checked.valid) {
    const error = checked.error;
    throw new PolicyError(
      path,
      `invalid CEL: ${error ? describeCelError(error, stage) : 'the expression does not type-check'}`,
      { cause: error },
    );
  }
  // dyn is only known at run time: a non-bool value then counts as a runtime error.
  if (want === 'bool' && checked.type !== 'bool' && checked.type !== 'dyn') {
    throw new PolicyError(path, `must evaluate to a bool, got ${checked.type ?? 'an unknown type'}`);
  }
  checkRegexLiterals(parsed.ast, path);
  return { source, evaluate: (vars) => parsed(vars) };
}

function isNode(value: unknown): value is ASTNode {
  return typeof value === 'object' && value !== null && 'op' in value && 'args' in value;
}

function childNodes(value: unknown): ASTNode[] {
  if (Array.isArray(value)) return value.flatMap(childNodes);
  return isNode(value) ? [value] : [];
}

/** CEL compiles `matches()` patterns only when it runs; a literal one can be checked now. */
function checkRegexLiterals(node: ASTNode, path: PolicyPath): void {
  if (node.op === 'rcall' && node.args[0] === 'matches') {
    const pattern = node.args[2][0];
    if (pattern?.op === 'value' && typeof pattern.args === 'string') {
      try {
        new RegExp(pattern.args);
      } catch (error) {
        throw new PolicyError(path, `invalid CEL: matches() is given ${(error as Error).message}`, {
          cause: error,
        });
      }
    }
  }
  if (node.op === 'value' || node.op === 'id') return;
  for (const child of childNodes(node.args)) checkRegexLiterals(child, path);
}
