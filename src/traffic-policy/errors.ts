/** Where in a policy module something is: `['inbound', 2, 'expressions', 0]`. */
export type PolicyPath = ReadonlyArray<string | number>;

/** `inbound[2].expressions[0]`: the way a caller wrote the field, with an optional root. */
export function formatPolicyPath(path: PolicyPath, root = ''): string {
  let out = root;
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? part : `.${part}`;
  }
  return out === '' ? 'policy' : out;
}

/**
 * A policy that cannot be compiled: `path` names the field, `reason` says what is wrong with it
 * (without the path, so an API can prefix its own root such as `policy.`).
 */
export class PolicyError extends Error {
  readonly path: PolicyPath;
  readonly reason: string;

  constructor(path: PolicyPath, reason: string, options?: { cause?: unknown }) {
    super(`${formatPolicyPath(path)}: ${reason}`, options?.cause === undefined ? undefined : options);
    this.name = 'PolicyError';
    this.path = path;
    this.reason = reason;
  }
}

/**
 * Something that went wrong while a compiled policy ran (an expression that threw, a rewrite that
 * produced no path). The policy goes on as if the rule or action did not apply; this is what the
 * `onError` hook receives.
 */
export class PolicyEvaluationError extends Error {
  readonly path: PolicyPath;
  readonly rule: string;

  constructor(path: PolicyPath, rule: string, reason: string, options?: { cause?: unknown }) {
    super(
      `${formatPolicyPath(path)} (rule '${rule}'): ${reason}`,
      options?.cause === undefined ? undefined : options,
    );
    this.name = 'PolicyEvaluationError';
    this.path = path;
    this.rule = rule;
  }
}
