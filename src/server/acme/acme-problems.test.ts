import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import axios from 'axios';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asOrderFailure } from './acme-order.js';
import {
  caUnreachable,
  lastCaProblem,
  parseRetryAfter,
  recordProblemsOf,
  withProblemRecorder,
} from './acme-problems.js';

/**
 * What the certificate manager learns from a CA that refuses: a loopback HTTP server answering as
 * an ACME CA does (problem documents, `Retry-After`), called through an axios instance set up as the
 * ACME client's is.
 */
let server: Server;
let base = '';
const http = axios.create();
recordProblemsOf(http);

beforeAll(async () => {
  server = createServer((request, response) => {
    if (request.url === '/rate-limited') {
      response.writeHead(429, { 'content-type': 'application/problem+json', 'retry-after': '3600' });
      response.end(
        JSON.stringify({
          type: 'urn:ietf:params:acme:error:rateLimited',
          detail: 'too many certificates already issued for this exact set of identifiers',
          status: 429,
        }),
      );
    } else if (request.url === '/caa') {
      response.writeHead(403, { 'content-type': 'application/problem+json' });
      response.end(
        JSON.stringify({
          type: 'urn:ietf:params:acme:error:caa',
          detail: 'CAA record forbids issuance',
          status: 403,
        }),
      );
    } else {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('the CA problem recorder', () => {
  it("turns a rateLimited answer into an INTERNAL_ERROR retried no sooner than the CA's Retry-After", async () => {
    const failure = await withProblemRecorder(async () => {
      const error = await http.get(`${base}/rate-limited`).catch((caught: unknown) => caught);
      expect(lastCaProblem()).toMatchObject({ type: 'rateLimited', status: 429 });
      return asOrderFailure(error);
    });
    expect(failure.code).toBe('INTERNAL_ERROR');
    expect(failure.message).toContain("the CA's rate limit: too many certificates");
    const inAnHour = Date.now() + 3_600_000;
    expect(Math.abs((failure.retryAfter?.getTime() ?? 0) - inAnHour)).toBeLessThan(5_000);
  });

  it('turns a problem only the name owner can mend (CAA) into a DNS_ERROR', async () => {
    const failure = await withProblemRecorder(async () =>
      asOrderFailure(await http.get(`${base}/caa`).catch((caught: unknown) => caught)),
    );
    expect(failure.code).toBe('DNS_ERROR');
    expect(failure.message).toBe('CAA record forbids issuance');
  });

  it('says which request got no answer at all, and a later answer clears it', async () => {
    await withProblemRecorder(async () => {
      const closed = `http://127.0.0.1:1/directory`;
      const failure = asOrderFailure(await http.get(closed).catch((caught: unknown) => caught));
      expect(failure.code).toBe('INTERNAL_ERROR');
      expect(failure.message).toBe(`the CA could not be reached (GET ${closed}: ECONNREFUSED)`);
      await http.get(`${base}/fine`);
      expect(caUnreachable()).toBeUndefined();
      expect(lastCaProblem()).toBeUndefined();
    });
  });

  it('keeps each job to its own answers', async () => {
    const [limited, fine] = await Promise.all([
      withProblemRecorder(async () => {
        await http.get(`${base}/rate-limited`).catch(() => undefined);
        return lastCaProblem()?.type;
      }),
      withProblemRecorder(async () => {
        await http.get(`${base}/fine`);
        return lastCaProblem()?.type;
      }),
    ]);
    expect([limited, fine]).toEqual(['rateLimited', undefined]);
  });
});

describe('parseRetryAfter', () => {
  const now = new Date('2026-11-29T10:00:00Z');
  it('reads delta-seconds and HTTP dates, and nothing else', () => {
    expect(parseRetryAfter('120', now)?.toISOString()).toBe('2026-11-29T10:02:00.000Z');
    expect(parseRetryAfter('Sun, 29 Nov 2026 11:00:00 GMT', now)?.toISOString()).toBe(
      '2026-11-29T11:00:00.000Z',
    );
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
  });
});
