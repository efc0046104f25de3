/** Host names as TLS and HTTP use them: the host of a hostport, and certificate name matching. */

/** The host of `host:port`. */
export function hostOf(hostport: string): string {
  return hostport.slice(0, hostport.lastIndexOf(':')).toLowerCase();
}

/**
 * Whether `pattern` (a name, or `*.example.com`) covers `name`, as TLS certificate names do: a
 * wildcard stands for exactly one leftmost label.
 */
export function nameMatches(pattern: string, name: string): boolean {
  const wanted = pattern.toLowerCase();
  const host = name.toLowerCase();
  if (!wanted.startsWith('*.')) return wanted === host;
  const dot = host.indexOf('.');
  return dot > 0 && host.slice(dot + 1) === wanted.slice(2);
}

/** The first item whose names cover `name`, exact names before wildcards. */
export function bestMatch<T>(
  items: readonly T[],
  namesOf: (item: T) => readonly string[],
  name: string,
): T | undefined {
  const exact = items.find((item) =>
    namesOf(item).some((pattern) => !pattern.startsWith('*.') && nameMatches(pattern, name)),
  );
  return exact ?? items.find((item) => namesOf(item).some((pattern) => nameMatches(pattern, name)));
}
