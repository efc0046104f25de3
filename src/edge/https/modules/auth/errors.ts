import { AuthorizationResponseError, ResponseBodyError, WWWAuthenticateChallengeError } from 'openid-client';

/**
 * What may be logged about a failed exchange with the IdP: error codes, statuses and our own
 * messages. Never a response body (`cause` of openid-client's errors) or its `error_description`.
 */
export function describeIdpError(error: unknown): Record<string, unknown> {
  if (error instanceof ResponseBodyError) return { error: error.error, status: error.status };
  if (error instanceof AuthorizationResponseError) return { error: error.error };
  if (error instanceof WWWAuthenticateChallengeError) {
    // A 401 with a challenge, e.g. `Basic error="invalid_client"` from a token endpoint.
    const [challenge] = error.cause;
    return { status: error.status, challenge: challenge?.scheme, error: challenge?.parameters.error };
  }
  if (!(error instanceof Error)) return { error: String(error) };
  const detail: Record<string, unknown> = { name: error.name, message: error.message };
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') detail.code = code;
  // undici's "fetch failed" says why only in its cause (ECONNREFUSED, a certificate error...).
  if (error.cause instanceof Error) detail.cause = error.cause.message;
  return detail;
}

/** A provider API answered other than 2xx: the status is all the edge keeps of it. */
export class ProviderApiError extends Error {
  constructor(
    readonly api: string,
    readonly status: number,
  ) {
    super(`the provider's ${api} API answered HTTP ${status}`);
    this.name = 'ProviderApiError';
  }
}

/** The IdP (or provider API) answered and said no, as opposed to failing to answer. */
export function isRefusal(error: unknown): boolean {
  if (error instanceof ResponseBodyError || error instanceof WWWAuthenticateChallengeError) return true;
  return error instanceof ProviderApiError && (error.status === 401 || error.status === 403);
}
