import type { ErrorBody } from '../../schemas/common.js';
import { type ErrorCode, errorCatalogue } from './catalogue.js';

export type ErrorDetails = Omit<ErrorBody['details'], 'operation_id'>;

/** An error that becomes a JSON error response; `msg` is shown to the caller, so it names the field. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  /** Said in the body's `details` beside `operation_id` (e.g. the resource an Idempotency-Key made). */
  readonly details: ErrorDetails;

  constructor(
    code: ErrorCode,
    msg: string,
    options?: { cause?: unknown; headers?: Record<string, string>; details?: ErrorDetails },
  ) {
    super(msg, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ApiError';
    this.code = code;
    this.statusCode = errorCatalogue[code].status;
    this.headers = options?.headers ?? {};
    this.details = options?.details ?? {};
  }
}

export const badRequest = (msg: string) => new ApiError('ERR_EDGEWARD_100', msg);
export const badReference = (field: string, id: string, kind: string) =>
  new ApiError('ERR_EDGEWARD_103', `${field}: no ${kind} with id '${id}' exists`);
export const notFound = (kind: string, id: string) =>
  new ApiError('ERR_EDGEWARD_400', `${kind} with id '${id}' not found`);
export const conflict = (msg: string) => new ApiError('ERR_EDGEWARD_501', msg);
export const inUse = (msg: string) => new ApiError('ERR_EDGEWARD_502', msg);
export const forbidden = (msg: string) => new ApiError('ERR_EDGEWARD_300', msg);
