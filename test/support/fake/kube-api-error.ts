import { ApiException } from '@kubernetes/client-node';

const REASONS: Record<number, string> = {
  403: 'Forbidden',
  404: 'NotFound',
  409: 'Conflict',
  422: 'Invalid',
  500: 'InternalError',
};

/**
 * A failed Kubernetes call as `KubeApi` reports it: client-node's `ApiException` with the HTTP
 * status as `code` and a Status object as the body, so `statusCodeOf`, `isKubeNotFound` and
 * `describeKubeError` read it as they read the real thing.
 */
export function kubeApiError(
  code: number,
  message = `${REASONS[code] ?? 'Failure'} (fake)`,
): ApiException<string> {
  const status = {
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    message,
    reason: REASONS[code],
    code,
  };
  return new ApiException(code, `${code}: ${message}`, JSON.stringify(status), {});
}
