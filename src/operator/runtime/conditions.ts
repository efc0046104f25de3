import { redactText } from './redaction.js';

export type ConditionStatus = 'True' | 'False' | 'Unknown';

/** metav1.Condition as it appears in `status.conditions`. */
export interface Condition {
  type: string;
  status: ConditionStatus;
  /** CamelCase, machine-readable (`Reconciled`, `InvalidSpec`, `ApiError`, ...). */
  reason: string;
  message: string;
  /** RFC 3339; changes only when `status` changes. */
  lastTransitionTime: string;
  /** The `metadata.generation` the condition was computed from. */
  observedGeneration?: number;
}

/** The condition types every edgeward CR reports. */
export const ConditionType = {
  /** The server-side resource exists and matches the spec. */
  Ready: 'Ready',
  /** The last reconcile reached the server (False with the reason when it did not). */
  Synced: 'Synced',
} as const;

export interface ConditionUpdate {
  type: string;
  status: ConditionStatus;
  reason: string;
  message?: string;
}

const CAMEL_CASE = /^[A-Z][A-Za-z0-9]*$/;
/** metav1.Condition's limit. */
const MAX_MESSAGE = 32_768;

export function isCamelCaseReason(reason: string): boolean {
  return CAMEL_CASE.test(reason) && reason.length <= 1024;
}

/**
 * Returns a new conditions list with `update` applied: `observedGeneration` stamped, the message
 * redacted and bounded, and `lastTransitionTime` kept when the status did not change (a new
 * reason or message alone is not a transition). Other conditions are kept as they are; the
 * input is not modified. Throws on a reason that is not CamelCase: that is a programming error.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  update: ConditionUpdate,
  stamp: { observedGeneration: number | undefined; now?: () => Date },
): Condition[] {
  if (!isCamelCaseReason(update.reason)) {
    throw new Error(`condition ${update.type}: reason ${JSON.stringify(update.reason)} is not CamelCase`);
  }
  const existing = conditions?.find((condition) => condition.type === update.type);
  const now = (stamp.now?.() ?? new Date()).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const next: Condition = {
    type: update.type,
    status: update.status,
    reason: update.reason,
    message: redactText(update.message ?? '').slice(0, MAX_MESSAGE),
    lastTransitionTime: existing && existing.status === update.status ? existing.lastTransitionTime : now,
  };
  if (stamp.observedGeneration !== undefined) next.observedGeneration = stamp.observedGeneration;
  return existing
    ? (conditions ?? []).map((condition) => (condition.type === update.type ? next : condition))
    : [...(conditions ?? []), next];
}

export function getCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((condition) => condition.type === type);
}

export function isConditionTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return getCondition(conditions, type)?.status === 'True';
}
