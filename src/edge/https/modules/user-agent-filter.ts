import { ROUTE_MODULE_SCHEMAS } from '../../../schemas/route-module-table.js';
import type { UserAgentFilterModuleInput } from '../../../schemas/route-modules.js';
import { Pages } from '../pages.js';
import type { EdgeRouteModule, ModuleConfig } from './route-module.js';

export type UserAgentFilterConfig = Partial<Pick<UserAgentFilterModuleInput, 'allow' | 'deny'>>;

/**
 * Only this many leading characters of a User-Agent are matched. Real ones are a few hundred at
 * most; the bound caps what a backtracking pattern can cost per request (it does not turn an
 * exponential pattern into a cheap one, see `compileUserAgentPattern`).
 */
export const MAX_USER_AGENT_MATCH_LENGTH = 1024;

export class UserAgentFilterError extends Error {
  constructor(
    readonly pattern: string,
    cause: unknown,
  ) {
    super(`user_agent_filter pattern ${JSON.stringify(pattern)} does not compile: ${String(cause)}`, {
      cause,
    });
    this.name = 'UserAgentFilterError';
  }
}

export interface CompiledUserAgentPattern {
  regexp: RegExp;
  /** True when V8's linear-time engine runs it (no catastrophic backtracking possible). */
  linear: boolean;
}

/** Whether this process accepts the `l` flag (node started with --enable-experimental-regexp-engine). */
function linearEngineAvailable(): boolean {
  try {
    // biome-ignore lint/complexity/useRegexLiterals: a literal with an unknown flag fails to parse the module.
    new RegExp('', 'l');
    return true;
  } catch {
    return false;
  }
}

/**
 * One pattern, compiled as the API validated it: JavaScript syntax, no flags (case-sensitive,
 * unanchored search). Never `g`/`y`, whose `lastIndex` would make `test` stateful.
 *
 * When the process allows it, patterns the linear-time engine supports run on it (same matches,
 * no backtracking); backreferences and lookarounds still need the backtracking engine.
 */
export function compileUserAgentPattern(pattern: string): CompiledUserAgentPattern {
  if (linearEngineAvailable()) {
    try {
      return { regexp: new RegExp(pattern, 'l'), linear: true };
    } catch {
      // Not linear-time executable (or invalid): the plain compile below decides.
    }
  }
  try {
    return { regexp: new RegExp(pattern), linear: false };
  } catch (error) {
    throw new UserAgentFilterError(pattern, error);
  }
}

/**
 * Compiles a route's user_agent_filter into a predicate: true lets the request through, false
 * refuses it (the edge answers 403).
 *
 * Precedence, the rule of the API these fields come from, so configs written for it keep working:
 *
 * 1. A User-Agent matching any `allow` pattern is let through, whatever `deny` says: allow
 *    patterns are exceptions to the deny list (deny `[Bb]ot`, allow `Goodbot/`).
 * 2. Otherwise one matching any `deny` pattern is refused.
 * 3. Otherwise it is let through. An `allow` list alone therefore refuses nothing; to let only
 *    listed clients in, pair it with a deny-everything pattern: allow `^curl/`, deny `.*`.
 *
 * An absent or empty User-Agent is refused unless an `allow` pattern matches the empty string
 * (e.g. `^$`): a client hiding what it is does not pass a filter meant to keep clients out.
 *
 * Patterns search anywhere in the value (anchor with `^`/`$` yourself) and are case-sensitive.
 * Only the first MAX_USER_AGENT_MATCH_LENGTH characters are matched, so a `$`-anchored pattern
 * cannot match the end of a longer value.
 *
 * Throws UserAgentFilterError for a pattern this Node cannot compile (the API validates them, but
 * with the API server's Node version).
 */
export function compileUserAgentFilter(
  config: UserAgentFilterConfig,
): (userAgent: string | undefined) => boolean {
  const allow = (config.allow ?? []).map((pattern) => compileUserAgentPattern(pattern).regexp);
  const deny = (config.deny ?? []).map((pattern) => compileUserAgentPattern(pattern).regexp);
  return (userAgent) => {
    const subject = (userAgent ?? '').slice(0, MAX_USER_AGENT_MATCH_LENGTH);
    if (allow.some((regexp) => regexp.test(subject))) return true;
    if (subject === '') return false;
    return !deny.some((regexp) => regexp.test(subject));
  };
}

/** `user_agent_filter`: 403 for a client whose User-Agent the route's patterns refuse. */
export const userAgentFilterModule: EdgeRouteModule<ModuleConfig<'user_agent_filter'>> = {
  schema: ROUTE_MODULE_SCHEMAS.user_agent_filter.input,
  compile(config) {
    const allows = compileUserAgentFilter(config);
    return {
      onRequest: (exchange) =>
        allows(exchange.request.headers['user-agent']) ? undefined : exchange.page(Pages.userAgentDenied()),
    };
  },
};
