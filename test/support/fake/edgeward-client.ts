import { MockAgent } from 'undici';
import { EdgewardClient } from '../../../src/client/index.js';

/** A request the client sent, its JSON body parsed. */
export interface ApiCall {
  method: string;
  /** With the query string. */
  path: string;
  body: unknown;
}

export interface ApiReply {
  status: number;
  body?: unknown;
}

/** Answers a call, or returns undefined for one the test does not expect (a 501). */
export type ApiHandler = (call: ApiCall) => ApiReply | undefined;

const BASE_URL = 'https://edgeward.test';

/**
 * A real `EdgewardClient` whose requests `handle` answers in memory (undici's MockAgent is its
 * dispatcher): the client's own paths, bodies and error types, no network. Nothing is retried, so
 * an error reply is the error the caller sees. Without a handler every call fails: for code a
 * test expects to make no API call.
 */
export function fakeEdgewardClient(handle: ApiHandler = () => undefined): EdgewardClient {
  const agent = new MockAgent();
  agent.disableNetConnect();
  agent
    .get(BASE_URL)
    .intercept({ path: () => true, method: () => true })
    .reply((request) => {
      const call = { method: request.method, path: request.path, body: parseBody(request.body) };
      const reply = handle(call) ?? {
        status: 501,
        body: { error_code: 'ERR_TEST_UNEXPECTED', msg: `unexpected ${call.method} ${call.path}` },
      };
      return {
        statusCode: reply.status,
        data: reply.body === undefined ? '' : JSON.stringify(reply.body),
        responseOptions: { headers: { 'content-type': 'application/json' } },
      };
    })
    .persist();
  return new EdgewardClient({
    baseUrl: BASE_URL,
    apiKey: 'test',
    dispatcher: agent,
    retry: { maxAttempts: 1 },
  });
}

function parseBody(body: unknown): unknown {
  return typeof body === 'string' && body !== '' ? JSON.parse(body) : undefined;
}
