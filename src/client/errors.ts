/** An error response of the management API, with everything needed to report or branch on it. */
export class EdgewardApiError extends Error {
  readonly errorCode: string;
  readonly statusCode: number;
  readonly operationId: string | undefined;
  readonly method: string;
  readonly path: string;
  /** The server's `Retry-After` (429, 503), when it sent one. */
  readonly retryAfterMs: number | undefined;
  /**
   * ERR_EDGEWARD_500 (an Idempotency-Key reused with another request): the id of the resource the
   * key's first request made. A caller whose first answer was lost finds it here.
   */
  readonly resourceId: string | undefined;

  constructor(init: {
    method: string;
    path: string;
    statusCode: number;
    errorCode: string;
    msg: string;
    operationId: string | undefined;
    retryAfterMs?: number;
    resourceId?: string;
  }) {
    super(`${init.method} ${init.path}: ${init.statusCode} ${init.errorCode}: ${init.msg}`);
    this.name = 'EdgewardApiError';
    this.errorCode = init.errorCode;
    this.statusCode = init.statusCode;
    this.operationId = init.operationId;
    this.method = init.method;
    this.path = init.path;
    this.retryAfterMs = init.retryAfterMs;
    this.resourceId = init.resourceId;
  }

  /** The resource this request's Idempotency-Key made before, with another request body. */
  get madeByKeyBefore(): string | undefined {
    return this.errorCode === 'ERR_EDGEWARD_500' ? this.resourceId : undefined;
  }

  get isNotFound(): boolean {
    return this.statusCode === 404;
  }

  /** 400s are the caller's to fix: retrying the same request cannot succeed. */
  get isTerminal(): boolean {
    return (
      this.statusCode >= 400 && this.statusCode < 500 && this.statusCode !== 429 && this.statusCode !== 408
    );
  }
}

/** The request never got an HTTP answer (connection refused, reset, timeout). */
export class EdgewardTransportError extends Error {
  constructor(method: string, path: string, cause: unknown) {
    super(`${method} ${path}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'EdgewardTransportError';
  }
}
