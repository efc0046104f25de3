/**
 * Regular expressions of `redirect` and `url-rewrite` (JavaScript syntax, like `matches()` in CEL)
 * and the `$1`-style references of their replacement strings.
 */

/** The compiled pattern, or the reason it does not compile. */
export function compilePattern(source: string): { regex: RegExp } | { problem: string; cause: unknown } {
  try {
    return { regex: new RegExp(source) };
  } catch (error) {
    return { problem: `is not a valid regular expression: ${(error as Error).message}`, cause: error };
  }
}

/** How many capture groups `regex` has, and their names. */
function groupsOf(regex: RegExp): { count: number; names: Set<string> } {
  // An alternative that matches the empty string makes every group take part in the match.
  const match = new RegExp(`${regex.source}|`, regex.flags).exec('');
  return { count: (match?.length ?? 1) - 1, names: new Set(Object.keys(match?.groups ?? {})) };
}

// `$$`, `$&`, `` $` `` and `$'` are matched too, so that `$$1` is not read as `$1`.
const REFERENCE = /\$(\$|&|`|'|\d+|<([^>]*)>)/g;

/**
 * Why `replacement` refers to groups `regex` does not have (`$3` of a pattern with two, `$<id>`
 * of a pattern without that name), or undefined when it does not. JavaScript would leave such a
 * reference in the output literally, which is never what was meant. Without a regex, no
 * reference is allowed.
 */
export function replacementProblem(replacement: string, regex: RegExp | undefined): string | undefined {
  const groups = regex ? groupsOf(regex) : { count: 0, names: new Set<string>() };
  for (const match of replacement.matchAll(REFERENCE)) {
    const [reference, body, name] = match;
    if (body === undefined || !/^[\d<]/.test(body)) continue;
    if (!regex) return `refers to ${reference}, but there is no 'from' pattern to capture it`;
    if (name !== undefined) {
      if (!groups.names.has(name)) return `refers to ${reference}, but 'from' has no group named '${name}'`;
      continue;
    }
    const index = Number(body);
    if (index === 0) return `refers to $0, which is no capture group; use $& for the whole match`;
    if (index > groups.count) {
      return `refers to ${reference}, but 'from' has ${groups.count} capture group${groups.count === 1 ? '' : 's'}`;
    }
  }
  return undefined;
}
