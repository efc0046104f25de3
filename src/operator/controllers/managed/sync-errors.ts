/**
 * A failure the same spec will always meet (e.g. a changed immutable field of an adopted
 * resource): reported as Ready=False with `reason`, not retried until the spec changes.
 */
export class TerminalSyncError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = 'TerminalSyncError';
  }
}

/**
 * A failure after the sync already made something on the server that status must remember (e.g.
 * a TLSEdge's tunnel-group backend created before the edge create failed): the fields are written
 * with the failure, so the retry reuses it and a delete of the CR cleans it up.
 */
export class SyncProgressError extends Error {
  constructor(
    readonly statusFields: Record<string, unknown>,
    cause: unknown,
  ) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.name = 'SyncProgressError';
  }
}
