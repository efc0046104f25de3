import { ApiException } from '@kubernetes/client-node';

/**
 * The HTTP status of a failed Kubernetes call: `ApiException.code` from API clients, `statusCode`
 * from `Watch`, `code` of a Status object (a watch ERROR event).
 */
export function statusCodeOf(error: unknown): number | undefined {
  if (error instanceof ApiException) return error.code;
  if (typeof error === 'object' && error !== null) {
    const { statusCode, code } = error as { statusCode?: unknown; code?: unknown };
    if (typeof statusCode === 'number') return statusCode;
    if (typeof code === 'number') return code;
  }
  return undefined;
}

/** 404 from Kubernetes (the edgeward API's is `isEdgewardNotFound`, in controllers/shared). */
export const isKubeNotFound = (error: unknown) => statusCodeOf(error) === 404;
export const isConflict = (error: unknown) => statusCodeOf(error) === 409;
/** 410: a resourceVersion or continue token too old to be served; the remedy is a fresh list. */
export const isGone = (error: unknown) => statusCodeOf(error) === 410;

/** The `message` of a Kubernetes Status body, else the error's own message: for logs and errors. */
export function describeKubeError(error: unknown): string {
  if (error instanceof ApiException) {
    const body: unknown = error.body;
    if (typeof body === 'string') {
      try {
        const status = JSON.parse(body) as { message?: string };
        if (status.message) return `${error.code}: ${status.message}`;
      } catch {
        // Not a Status: fall through to the raw text.
      }
      return `${error.code}: ${body.slice(0, 200)}`;
    }
    return `${error.code}: ${error.message}`;
  }
  return error instanceof Error ? error.message : String(error);
}
