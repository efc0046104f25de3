import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import secureJson from 'secure-json-parse';
import { ApiError } from '../errors/api-error.js';
import { DEFAULT_MAX_JSON_DEPTH, parsedBodyDefect } from './parsed-body-check.js';

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

/** A lone surrogate in parsed JSON can only come from such an escape: valid UTF-8 cannot encode one. */
const MAY_HOLD_A_SURROGATE = /\\u[dD][89a-fA-F]/;

/** Fatal: bytes that are not UTF-8 are refused, not replaced with U+FFFD and stored as if sent. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

export interface JsonBodyOptions {
  /** How deeply arrays and objects may nest (`--max-json-depth`); deeper is a 400 naming the field. */
  maxDepth?: number | undefined;
}

/**
 * JSON bodies, parsed with JSON.parse and checked with the scan of Fastify's own parser
 * (secure-json-parse), its two refusals told apart. Fastify answers both with "Body is not valid
 * JSON"; a client whose valid JSON holds a key named `__proto__` (or `constructor` holding
 * `prototype`) could not find what to change. Those keys are refused rather than dropped: code
 * that copies a parsed object with assignment would set its prototype, and dropping a key would
 * lose what the client sent without saying so.
 *
 * The text must be UTF-8 (RFC 8259) and its strings well-formed Unicode: an unpaired surrogate
 * escape (`"\ud800"`) would be answered as sent but stored as U+FFFD. Arrays and objects nest at
 * most `maxDepth` levels, so no walk over a body (ours, zod's, the stores') runs out of stack. Each
 * refusal is checked here once for every route, and names the field.
 *
 * One habit of existing clients is accepted: an empty body sent with `Content-Type:
 * application/json` (many clients send that header on every request, DELETE and agent commands
 * included) is "no body", not malformed JSON.
 */
export const jsonBodyPlugin = fp(async (app: FastifyInstance, options: JsonBodyOptions) => {
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_JSON_DEPTH;
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
    let text: string;
    try {
      text = UTF8.decode(body as Buffer); // parseAs: buffer
    } catch (error) {
      done(
        new ApiError('ERR_EDGEWARD_102', 'body: not valid JSON (the text is not UTF-8)', { cause: error }),
      );
      return;
    }
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    let parsed: unknown;
    try {
      // A byte order mark is allowed, as Fastify's parser allows it: the decoder has dropped it.
      parsed = JSON.parse(text);
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
    const defect = parsedBodyDefect(parsed, { maxDepth, checkSurrogates: MAY_HOLD_A_SURROGATE.test(text) });
    if (defect !== undefined) {
      done(new ApiError('ERR_EDGEWARD_100', defect));
      return;
    }
    done(null, parsed);
  });
  // The API speaks JSON only: without a text/plain parser, other media types are 415s.
  app.removeContentTypeParser('text/plain');
});
