/**
 * The `bind:` rules of a credential's ACL, applied to what a session asks to bind (its labels). An
 * empty ACL, or `*`, allows everything; otherwise every label must match a `bind:key=value` rule,
 * where either side may be `*`. Domain and address rules bind names and ports, which label-routed
 * sessions never ask for, so they allow no label.
 */
export function refusedBinds(acl: readonly string[], labels: Readonly<Record<string, string>>): string[] {
  if (acl.length === 0 || acl.includes('*')) return [];
  const patterns = acl.flatMap((rule) => {
    if (!rule.startsWith('bind:')) return [];
    const target = rule.slice('bind:'.length);
    const equals = target.indexOf('=');
    return equals < 0 ? [] : [{ key: target.slice(0, equals), value: target.slice(equals + 1) }];
  });
  return Object.entries(labels)
    .filter(
      ([key, value]) =>
        !patterns.some(
          (pattern) =>
            (pattern.key === '*' || pattern.key === key) &&
            (pattern.value === '*' || pattern.value === value),
        ),
    )
    .map(([key, value]) => `${key}=${value}`);
}
