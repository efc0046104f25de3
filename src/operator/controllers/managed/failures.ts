import { EdgewardApiError } from '../../../client/errors.js';
import { ConditionType, getCondition } from '../../runtime/conditions.js';
import type { ReconcileContext, ReconcileOutcome } from '../../runtime/controller.js';
import type { ManagedController } from './managed-controller.js';
import type { ManagedObject, RemoteResource } from './managed-resource.js';
import { writeStatus } from './status.js';
import { SyncProgressError, TerminalSyncError } from './sync-errors.js';

/**
 * Reasons not retried for the same generation: only a new spec fixes them. (A wrong adopt-id is
 * fixed by an annotation, which enqueues without a new generation: not in this set.)
 */
const TERMINAL_REASONS = new Set(['InvalidSpec']);

/** Whether this very generation failed terminally: resyncs do not retry it, a new spec will. */
export function failedTerminally(object: ManagedObject): boolean {
  const ready = getCondition(object.status?.conditions, ConditionType.Ready);
  return (
    ready?.status === 'False' &&
    TERMINAL_REASONS.has(ready.reason) &&
    ready.observedGeneration === object.metadata?.generation
  );
}

/**
 * Reports a failure: API 400s (and other terminal 4xx) end the reconcile (retried only for a new
 * generation); 429, 5xx and transport errors are reported as ApiUnavailable and rethrown for backoff.
 */
export async function failed<T extends ManagedObject, R, Remote extends RemoteResource>(
  controller: ManagedController<T, R, Remote>,
  context: ReconcileContext,
  object: T,
  error: unknown,
): Promise<ReconcileOutcome | undefined> {
  // Aborted: this replica may no longer lead; the status is the next leader's to write.
  if (context.signal.aborted) throw error;
  const fields = error instanceof SyncProgressError ? error.statusFields : undefined;
  const cause = error instanceof SyncProgressError ? error.cause : error;
  const terminal = terminalReason(cause);
  const message = cause instanceof Error ? cause.message : String(cause);
  if (terminal) {
    // Not retried, so the manager never logs it: say it here, with the id when there is one.
    context.log.warn({ id: object.status?.id, reason: terminal }, message);
    await controller.events.warning(object, terminal, message);
    await writeStatus(controller, object, {
      ready: { status: 'False', reason: terminal, message },
      synced: { status: 'False', reason: terminal, message },
      fields,
    });
    return undefined;
  }
  const reason = retriedReason(cause);
  const retryAfter = cause instanceof EdgewardApiError ? cause.retryAfterMs : undefined;
  // The backoff honours Retry-After; status says how long, so `kubectl get` shows why it waits.
  const said =
    reason === 'RateLimited' && retryAfter !== undefined
      ? `${message} (retrying after ${Math.ceil(retryAfter / 1000)} s, the server's Retry-After)`
      : message;
  try {
    await writeStatus(controller, object, {
      ready: { status: 'False', reason, message: said },
      synced: { status: 'False', reason, message: said },
      fields,
    });
  } catch (statusError) {
    throw new Error(message, { cause: new AggregateError([error, statusError]) });
  }
  throw error;
}

/**
 * Only what the spec itself got wrong is terminal: a 400, 413 or 422 from the server, or the
 * sync's own TerminalSyncError. Other 4xx can heal without a spec change (a rotated API key 401/
 * 403, a hostport another edge releases 409, a resource deleted between read and write 404), so
 * they are retried with backoff like 429 and 5xx.
 */
function terminalReason(error: unknown): string | undefined {
  if (error instanceof TerminalSyncError) return error.reason;
  if (error instanceof EdgewardApiError && [400, 413, 422].includes(error.statusCode)) return 'InvalidSpec';
  return undefined;
}

/** The Ready reason of a failure that is retried. */
function retriedReason(error: unknown): string {
  if (!(error instanceof EdgewardApiError)) return 'ApiUnavailable';
  const reasons: Record<number, string> = {
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'NotFound',
    409: 'Conflict',
    429: 'RateLimited',
  };
  return reasons[error.statusCode] ?? 'ApiUnavailable';
}
