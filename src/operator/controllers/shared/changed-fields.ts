import { sameJson } from '../../runtime/same-json.js';

/** The keys of `desired` whose values differ from `current` (for PATCH bodies of changed fields only). */
export function changedFields<D extends Record<string, unknown>>(
  desired: D,
  current: Record<string, unknown>,
): Partial<D> {
  const changed: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(desired)) {
    if (value !== undefined && !sameJson(value, current[key])) changed[key] = value;
  }
  return changed as Partial<D>;
}
