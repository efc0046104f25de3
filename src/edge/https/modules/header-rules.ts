import type { HeadersModuleInput } from '../../../schemas/route-modules.js';

/** Headers as node:http gives and takes them (IncomingHttpHeaders-like). */
export type HeaderRecord = Record<string, string | string[] | undefined>;

export type HeaderRulesConfig = Partial<Pick<HeadersModuleInput, 'add' | 'remove'>>;

/**
 * Names a rule may neither add nor remove. They belong to the connection or to the message
 * framing, which the proxy manages per hop: a rule-made `content-length` or `transfer-encoding`
 * that disagrees with the body desynchronizes the two ends (request smuggling), the hop-by-hop
 * ones (RFC 9110 7.6.1) are stripped or rewritten by the proxy anyway, and `host` routes the
 * request at the upstream (the proxy sets it).
 */
export const PROTECTED_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'content-length',
  'host',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** What node:http refuses in a header value (it throws ERR_INVALID_CHAR on setHeader). */
const INVALID_VALUE_CHAR = /[^\t\x20-\x7e\x80-\xff]/;

export interface IgnoredHeaderRule {
  rule: 'add' | 'remove';
  name: string;
  reason: 'protected' | 'invalid_value';
}

export interface HeaderRules {
  /** A new record: `remove` names dropped, then `add` names set (replacing every existing value). */
  apply(headers: HeaderRecord): HeaderRecord;
  /** Rules left out at compile time, for the caller to log. */
  readonly ignored: readonly IgnoredHeaderRule[];
}

/**
 * Compiles a request_headers or response_headers module.
 *
 * - Names are case-insensitive: `remove: ['X-Debug']` drops `x-debug` and `X-DEBUG` alike, and an
 *   added header replaces every existing spelling of its name. Added names are written in lower
 *   case (as node:http reports them; HTTP/2 requires it).
 * - `remove` runs first, then `add`; so a name in both ends up with the added value.
 * - `add` replaces, never appends: adding `set-cookie` drops the upstream's cookies.
 * - Values are plain text: the module's schema documents no variable substitution.
 * - PROTECTED_HEADERS are ignored in both lists, and so are added values node:http would refuse
 *   (characters outside tab, 0x20-0x7E and 0x80-0xFF; the schema itself only refuses CR, LF and
 *   NUL), since setting one would throw in the middle of a request. Both land in `ignored`.
 */
export function compileHeaderRules(config: HeaderRulesConfig): HeaderRules {
  const ignored: IgnoredHeaderRule[] = [];
  const remove = new Set<string>();
  for (const name of config.remove ?? []) {
    const lower = name.toLowerCase();
    if (PROTECTED_HEADERS.has(lower)) ignored.push({ rule: 'remove', name, reason: 'protected' });
    else remove.add(lower);
  }
  const add = new Map<string, string>();
  for (const [name, value] of Object.entries(config.add ?? {})) {
    const lower = name.toLowerCase();
    if (PROTECTED_HEADERS.has(lower)) ignored.push({ rule: 'add', name, reason: 'protected' });
    else if (INVALID_VALUE_CHAR.test(value)) ignored.push({ rule: 'add', name, reason: 'invalid_value' });
    else add.set(lower, value);
  }

  return {
    ignored,
    apply(headers) {
      // Null prototype, like node's own header objects: a header named `__proto__` stays data.
      const result: HeaderRecord = Object.create(null);
      for (const [name, value] of Object.entries(headers)) {
        const lower = name.toLowerCase();
        if (!remove.has(lower) && !add.has(lower)) result[name] = value;
      }
      for (const [name, value] of add) result[name] = value;
      return result;
    },
  };
}
