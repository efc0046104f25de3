const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * Parses a Go-style duration as Kubernetes users write them in annotations (`90s`, `5m`,
 * `1h30m`, `500ms`); undefined when it is not one.
 */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim();
  if (!/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(trimmed)) return undefined;
  let total = 0;
  for (const part of trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) {
    total += Number(part[1]) * (UNIT_MS[part[2] ?? ''] ?? Number.NaN);
  }
  return Number.isFinite(total) ? Math.round(total) : undefined;
}
