import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import secureJson from 'secure-json-parse';
import { ApiError } from '../errors/api-error.js';

/**
 * V8's reason without the copy of the text it may quote, whole or cut at either end
 * (`Unexpected token '}', ..."key": tru}" is not valid JSON`): the text may hold a secret, and
 * error messages reach logs.
 */
function whereJsonBreaks(error: unknown): string {
  return String((error as Error).message).replace(/, (?:\.\.\.)?".*"(?:\.\.\.)? is not valid JSON$/s, '');
}

/** Either key is spelled out in the text or written with \u escapes; only then is a scan needed. */
const MAY_HOLD_A_PROTOTYPE_KEY = /proto|\\u/;

/**
 * JSON bodies, parsed with JSON.parse and checked with the scan of Fastify's own parser
 * (secure-json-parse), its two refusals told apart. Fastify answers both with "Body is not valid
 * JSON"; a client whose valid JSON holds a key named `__proto__` (or `constructor` holding
 * `prototype`) could not find what to change. Those keys are refused rather than dropped: code
 * that copies a parsed object with assignment would set its prototype, and dropping a key would
 * lose what the client sent without saying so.
 *
 * One habit of existing clients is accepted: an empty body sent with `Content-Type:
 * application/json` (many clients send that header on every request, DELETE and agent commands
 * included) is "no body", not malformed JSON.
 */
export const jsonBodyPlugin = fp(async (app: FastifyInstance) => {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    let parsed: unknown;
    try {
      // A byte order mark is allowed, as Fastify's parser allows it.
      parsed = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
    } catch (error) {
      done(
        new ApiError('ERR_EDGEWARD_102', `body: not valid JSON (${whereJsonBreaks(error)})`, {
          cause: error,
        }),
      );
      return;
    }
    if (typeof parsed === 'object' && parsed !== null && MAY_HOLD_A_PROTOTYPE_KEY.test(text)) {
      try {
        secureJson.scan(parsed, { protoAction: 'error', constructorAction: 'error' });
      } catch (error) {
        done(
          new ApiError(
            'ERR_EDGEWARD_100',
            'body: a member named "__proto__", or "constructor" holding "prototype", is not accepted in any object',
            { cause: error },
          ),
        );
        return;
      }
    }
    done(null, parsed);
  });
  // The API speaks JSON only: without a text/plain parser, other media types are 415s.
  app.removeContentTypeParser('text/plain');
});
