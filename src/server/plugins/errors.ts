import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { InvalidInputError } from '../../crypto/invalid-input.js';
import type { ErrorBody } from '../../schemas/common.js';
import { ApiError, type ErrorDetails } from '../errors/api-error.js';
import { type ErrorCode, errorCatalogue } from '../errors/catalogue.js';
import { isUniqueViolation } from '../store/unique-violation.js';

export function sendError(
  request: FastifyRequest,
  reply: FastifyReply,
  code: ErrorCode,
  msg: string,
  details: ErrorDetails = {},
) {
  const status = errorCatalogue[code].status;
  const body: ErrorBody = {
    error_code: code,
    status_code: status,
    msg,
    details: { operation_id: request.id, ...details },
  };
  // Also set by the onRequest hook; errors the router raises arrive before any hook ran.
  reply.header('Svc-Operation-Id', request.id);
  return reply.code(status).type('application/json').send(body);
}

/** Maps Fastify's own errors (media type, size) onto the catalogue; JSON bodies are json-body.ts's. */
function fromFastify(error: FastifyError): { code: ErrorCode; msg: string } | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { code: 'ERR_EDGEWARD_105', msg: 'Content-Type: request bodies must be application/json' };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { code: 'ERR_EDGEWARD_600', msg: 'body: request body is too large' };
    default:
      break;
  }
  if (error.statusCode === 413) return { code: 'ERR_EDGEWARD_600', msg: 'body: request body is too large' };
  if (error.statusCode === 415) return { code: 'ERR_EDGEWARD_105', msg: error.message };
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return { code: 'ERR_EDGEWARD_100', msg: error.message };
  }
  return undefined;
}

/**
 * Errors the router raises before any route or hook runs (Fastify's `frameworkErrors`): a URL that
 * does not decode, a path segment longer than an id could ever be.
 */
export function sendFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    return sendError(request, reply, 'ERR_EDGEWARD_601', 'path: a path segment is too long');
  }
  return sendError(request, reply, 'ERR_EDGEWARD_100', 'path: the URL is malformed');
}

/** Every failure leaves as `{error_code, status_code, msg, details: {operation_id}}`. */
export const errorsPlugin = fp(async (app: FastifyInstance) => {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ApiError) {
      for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
      if (error.statusCode >= 500) request.log.error({ err: error }, 'request failed');
      return sendError(request, reply, error.code, error.message, error.details);
    }
    // The crypto helpers' refusals (a PEM that is not a certificate, a key that does not match) name
    // the field they refuse: bad input, like a schema's refusal.
    if (error instanceof InvalidInputError)
      return sendError(request, reply, 'ERR_EDGEWARD_100', error.message);
    if (isUniqueViolation(error)) {
      // A race the route's own existence check could not see (two replicas on PostgreSQL, say).
      return sendError(
        request,
        reply,
        'ERR_EDGEWARD_501',
        'conflicts with an existing resource; retry to see it',
      );
    }
    const mapped = fromFastify(error);
    if (mapped) return sendError(request, reply, mapped.code, mapped.msg);
    request.log.error({ err: error }, 'unhandled error');
    return sendError(
      request,
      reply,
      'ERR_EDGEWARD_800',
      'internal error; quote the operation id when reporting it',
    );
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(request, reply, 'ERR_EDGEWARD_401', `no route ${request.method} ${request.url.split('?')[0]}`),
  );
});
