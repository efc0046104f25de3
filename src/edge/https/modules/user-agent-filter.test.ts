import v8 from 'node:v8';
import { describe, expect, it } from 'vitest';
import { userAgentFilterModuleInput } from '../../../schemas/route-modules.js';
import {
  compileUserAgentFilter,
  compileUserAgentPattern,
  MAX_USER_AGENT_MATCH_LENGTH,
  UserAgentFilterError,
} from './user-agent-filter.js';

const CURL = 'curl/8.5.0';
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0';
const GOODBOT = 'Mozilla/5.0 (compatible; Goodbot/2.1)';
const BADBOT = 'Mozilla/5.0 (compatible; Badbot/1.0)';

describe('compileUserAgentFilter', () => {
  it('applies the precedence rules (table)', () => {
    const table: Array<{ allow: string[]; deny: string[]; ua: string | undefined; allowed: boolean }> = [
      // No rules: anything with a User-Agent passes.
      { allow: [], deny: [], ua: FIREFOX, allowed: true },
      // Deny only: matching refused, the rest passes.
      { allow: [], deny: ['[Bb]ot\\b'], ua: BADBOT, allowed: false },
      { allow: [], deny: ['[Bb]ot\\b'], ua: FIREFOX, allowed: true },
      // Allow beats deny: an exception carved out of a deny pattern.
      { allow: ['Goodbot/'], deny: ['bot/'], ua: GOODBOT, allowed: true },
      { allow: ['Goodbot/'], deny: ['bot/'], ua: BADBOT, allowed: false },
      { allow: ['Goodbot/'], deny: ['bot/'], ua: FIREFOX, allowed: true },
      // Allow alone refuses nothing...
      { allow: ['^curl/'], deny: [], ua: FIREFOX, allowed: true },
      // ...paired with deny-everything it is an allow list.
      { allow: ['^curl/'], deny: ['.*'], ua: CURL, allowed: true },
      { allow: ['^curl/'], deny: ['.*'], ua: FIREFOX, allowed: false },
      // Case-sensitive, unanchored.
      { allow: [], deny: ['curl'], ua: 'CURL/1', allowed: true },
      { allow: [], deny: ['(?:c|C)(?:u|U)(?:r|R)(?:l|L)'], ua: 'CURL/1', allowed: false },
      { allow: [], deny: ['Gecko'], ua: FIREFOX, allowed: false },
      { allow: [], deny: ['^Gecko'], ua: FIREFOX, allowed: true },
      // Any of several patterns.
      { allow: [], deny: ['nomatch', 'Firefox/\\d+'], ua: FIREFOX, allowed: false },
    ];
    for (const { allow, deny, ua, allowed } of table) {
      expect({ allow, deny, ua, allowed: compileUserAgentFilter({ allow, deny })(ua) }).toEqual({
        allow,
        deny,
        ua,
        allowed,
      });
    }
  });

  it('refuses an absent or empty User-Agent unless an allow pattern matches the empty string', () => {
    for (const ua of [undefined, '']) {
      expect(compileUserAgentFilter({})(ua)).toBe(false);
      expect(compileUserAgentFilter({ deny: ['bot'] })(ua)).toBe(false);
      expect(compileUserAgentFilter({ allow: ['^curl/'] })(ua)).toBe(false);
      expect(compileUserAgentFilter({ allow: ['^$'], deny: ['.*'] })(ua)).toBe(true);
      expect(compileUserAgentFilter({ allow: ['^curl/', '^$'] })(ua)).toBe(true);
    }
  });

  it('takes the parsed module config as it is', () => {
    const config = userAgentFilterModuleInput.parse({ allow: ['Goodbot'], deny: ['bot'] });
    const filter = compileUserAgentFilter(config);
    expect(filter(GOODBOT)).toBe(true);
    expect(filter('Mozilla/5.0 (compatible; Otherbot/1.0)')).toBe(false);
    expect(compileUserAgentFilter(userAgentFilterModuleInput.parse({}))(FIREFOX)).toBe(true);
  });

  it('gives the same answer on repeated calls (no stateful lastIndex)', () => {
    const filter = compileUserAgentFilter({ deny: ['bot'] });
    for (let i = 0; i < 5; i++) expect(filter('somebot')).toBe(false);
  });

  it(`matches only the first ${MAX_USER_AGENT_MATCH_LENGTH} characters`, () => {
    const long = `${'x'.repeat(MAX_USER_AGENT_MATCH_LENGTH)}EvilBot`;
    expect(compileUserAgentFilter({ deny: ['EvilBot'] })(long)).toBe(true);
    expect(compileUserAgentFilter({ deny: ['EvilBot'] })(`EvilBot${long}`)).toBe(false);
    expect(compileUserAgentFilter({ deny: [`^x{${MAX_USER_AGENT_MATCH_LENGTH}}$`] })(long)).toBe(false);
  });

  it('throws UserAgentFilterError naming a pattern that does not compile', () => {
    expect(() => compileUserAgentFilter({ deny: ['ok', '(unclosed'] })).toThrow(UserAgentFilterError);
    try {
      compileUserAgentFilter({ allow: ['[z-a]'] });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(UserAgentFilterError);
      expect((error as UserAgentFilterError).pattern).toBe('[z-a]');
      expect((error as Error).message).toContain('"[z-a]"');
    }
  });

  it('accepts exactly what the schema accepts', () => {
    expect(userAgentFilterModuleInput.safeParse({ deny: ['(unclosed'] }).success).toBe(false);
    // Named groups, lookarounds, backreferences, Unicode escapes: valid JavaScript without flags.
    const patterns = ['(?<name>bot)', 'bot(?!ty)', '(a)\\1', '\\u00e9', '\\-'];
    expect(userAgentFilterModuleInput.safeParse({ deny: patterns }).success).toBe(true);
    expect(() => compileUserAgentFilter({ deny: patterns })).not.toThrow();
  });

  it("runs patterns on V8's linear-time engine when the process allows it", () => {
    // What `node --enable-experimental-regexp-engine` does; the flag only makes the `l` flag legal.
    v8.setFlagsFromString('--enable-experimental-regexp-engine');
    expect(compileUserAgentPattern('(a+)+$').linear).toBe(true);
    // Backreferences and lookarounds fall back to the backtracking engine, with the same meaning.
    expect(compileUserAgentPattern('(a)\\1').linear).toBe(false);
    expect(compileUserAgentPattern('bot(?!ty)').linear).toBe(false);
    expect(() => compileUserAgentPattern('(unclosed')).toThrow(UserAgentFilterError);

    // A pattern that backtracks exponentially answers at once on the linear engine.
    const filter = compileUserAgentFilter({ deny: ['^(a+)+$'] });
    const started = performance.now();
    expect(filter(`${'a'.repeat(MAX_USER_AGENT_MATCH_LENGTH - 1)}!`)).toBe(true);
    expect(filter('aaaa')).toBe(false);
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});
