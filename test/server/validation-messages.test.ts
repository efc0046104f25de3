import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t.stop());

/** A route of a new HTTPS edge: its circuit_breaker module has the API's plain number fields. */
async function newRoutePath(): Promise<string> {
  const edge = await t.api<{ id: string }>('POST', '/edges/https', {});
  expect(edge.status).toBe(201);
  const route = await t.api<{ id: string }>('POST', `/edges/https/${edge.body.id}/routes`, {
    match_type: 'path_prefix',
    match: '/numbers',
  });
  expect(route.status, route.text).toBe(201);
  return `/edges/https/${edge.body.id}/routes/${route.body.id}`;
}

describe('validation messages', () => {
  it('says "must be a finite number" for a number literal too large for a double (it parses to Infinity)', async () => {
    const path = `${await newRoutePath()}/circuit_breaker`;
    for (const [raw, message] of [
      ['{"error_threshold_percentage": 1e400}', 'error_threshold_percentage: must be a finite number'],
      ['{"error_threshold_percentage": -1e400}', 'error_threshold_percentage: must be a finite number'],
      ['{"num_buckets": 1e999}', 'num_buckets: must be a finite number'],
    ]) {
      const response = await t.api('PUT', path, undefined, {
        rawBody: raw,
        headers: { 'content-type': 'application/json' },
      });
      expect(response.status, raw).toBe(400);
      expect(response.body).toEqual({
        error_code: 'ERR_EDGEWARD_100',
        status_code: 400,
        msg: message,
        details: { operation_id: expect.any(String) },
      });
    }
    // Other wrong types keep naming what was received.
    const text = await t.api('PUT', path, { error_threshold_percentage: '0.5' });
    expect(text.body.msg).toBe('error_threshold_percentage: must be a number, got string');
  });
});
