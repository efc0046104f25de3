import { type ErrorCode, errorCatalogue } from './catalogue.js';

/** An error that becomes a JSON error response; `msg` is shown to the caller, so it names the field. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, msg: string, options?: { cause?: unknown; headers?: Record<string, string> }) {
    super(msg, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ApiError';
    this.code = code;
    this.statusCode = errorCatalogue[code].status;
    this.headers = options?.headers ?? {};
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
