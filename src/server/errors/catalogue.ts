/**
 * The one catalogue of API errors. Codes are stable: a code is never reused for another meaning.
 * The error catalogue of docs/api.md lists them; a test keeps the two in step.
 */
export const errorCatalogue = {
  ERR_EDGEWARD_100: { status: 400, title: 'Invalid request body, query or path parameter' },
  ERR_EDGEWARD_101: { status: 400, title: 'Missing or unsupported Svc-Version header' },
  ERR_EDGEWARD_102: { status: 400, title: 'Malformed JSON body' },
  ERR_EDGEWARD_103: { status: 400, title: 'A referenced resource does not exist' },
  ERR_EDGEWARD_105: { status: 415, title: 'Request body is not application/json' },
  ERR_EDGEWARD_106: { status: 400, title: 'Invalid Idempotency-Key header' },
  ERR_EDGEWARD_200: { status: 401, title: 'Missing Authorization header' },
  ERR_EDGEWARD_201: { status: 401, title: 'Unknown or revoked API key' },
  ERR_EDGEWARD_300: { status: 403, title: 'Only admins may do this' },
  ERR_EDGEWARD_301: { status: 403, title: 'The bot user of this API key is inactive' },
  ERR_EDGEWARD_400: { status: 404, title: 'Resource not found' },
  ERR_EDGEWARD_401: { status: 404, title: 'Route not found' },
  ERR_EDGEWARD_402: { status: 405, title: 'Method not allowed on this path (see Allow)' },
  ERR_EDGEWARD_500: { status: 409, title: 'Idempotency-Key reused with a different request' },
  ERR_EDGEWARD_501: { status: 409, title: 'Resource already exists' },
  ERR_EDGEWARD_502: { status: 409, title: 'Resource is still in use' },
  ERR_EDGEWARD_600: { status: 413, title: 'Request body too large' },
  ERR_EDGEWARD_601: { status: 414, title: 'A path segment is too long' },
  ERR_EDGEWARD_700: { status: 429, title: 'Rate limited' },
  ERR_EDGEWARD_800: { status: 500, title: 'Internal server error' },
  ERR_EDGEWARD_900: { status: 400, title: 'Operation not possible in the current state' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof errorCatalogue;
