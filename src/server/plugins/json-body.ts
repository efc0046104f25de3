import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/**
 * JSON bodies with one habit of existing clients accepted: an empty body sent with
 * `Content-Type: application/json` (many clients send that header on every request, DELETE and
 * agent commands included) is "no body", not malformed JSON. Anything else goes through Fastify's
 * own parser, prototype-poisoning protection included.
 */
export const jsonBodyPlugin = fp(async (app: FastifyInstance) => {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    parseJson(request, text, done);
  });
  // The API speaks JSON only: without a text/plain parser, other media types are 415s.
  app.removeContentTypeParser('text/plain');
});
