import { createInterface } from 'node:readline';
import { Agent, type Dispatcher, request as undiciRequest } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/crypto/tokens.js';
import {
  EDGE_FEED_PATH,
  type EdgeFeedMessage,
  edgeCommandResultPath,
  edgeSessionPath,
} from '../../src/schemas/edge-config.js';
import { eventually } from '../support/eventually.js';
import { ADMIN_KEY, startTestServer, type TestServer } from '../support/server.js';

/**
 * The control plane's side of the data plane, on the wire: the feed an edge reads (NDJSON), what it
 * carries and to whom, and the session reports that make `GET /tunnel_sessions` live.
 */
let t: TestServer;
// A pool of this suite's own, destroyed before the server stops: undici may open a spare
// connection after an aborted stream, which would otherwise hold the server's close open.
const dispatcher = new Agent();
const request = (
  url: string,
  options: Omit<Dispatcher.RequestOptions, 'origin' | 'path' | 'method'> & {
    method?: Dispatcher.HttpMethod;
  } = {},
) => undiciRequest(url, { ...options, dispatcher });

beforeAll(async () => {
  t = await startTestServer();
});

afterAll(async () => {
  await dispatcher.destroy();
  await t?.stop();
});

/** Reads a feed as an edge does; `next` waits for a message matching `accept`. */
async function openFeed(baseUrl: string, edgeKey: string, edgeId: string) {
  const abort = new AbortController();
  const response = await request(`${baseUrl}${EDGE_FEED_PATH}?edge_id=${edgeId}&region=us`, {
    headers: { authorization: `Bearer ${edgeKey}` },
    signal: abort.signal,
  });
  expect(response.statusCode).toBe(200);
  expect(response.headers['content-type']).toBe('application/x-ndjson');
  const lines = createInterface({ input: response.body })[Symbol.asyncIterator]();
  return {
    async next(accept: (message: EdgeFeedMessage) => boolean, timeoutMs = 2000): Promise<EdgeFeedMessage> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const remaining = deadline - Date.now();
        if (remaining <= 0) throw new Error('no matching feed message in time');
        const line = await Promise.race([
          lines.next(),
          new Promise<never>((_, reject) => setTimeout(() => reject(new Error('feed timed out')), remaining)),
        ]);
        if (line.done) throw new Error('feed ended');
        const message = JSON.parse(line.value) as EdgeFeedMessage;
        if (accept(message)) return message;
      }
    },
    close: () => abort.abort(),
  };
}

const isConfig = (message: EdgeFeedMessage) => message.type === 'config';

describe('the edge feed', () => {
  it('is refused without the edge key, and an API key is not one', async () => {
    for (const authorization of [undefined, `Bearer ${ADMIN_KEY}`, 'Bearer ewedge_wrong']) {
      const response = await request(`${t.baseUrl}${EDGE_FEED_PATH}?edge_id=e1&region=us`, {
        headers: authorization ? { authorization } : {},
      });
      const body = (await response.body.json()) as Record<string, unknown>;
      expect(response.statusCode).toBe(401);
      expect(body).toMatchObject({ error_code: 'ERR_EDGEWARD_201' });
    }
  });

  it('names a bad query parameter', async () => {
    const response = await request(`${t.baseUrl}${EDGE_FEED_PATH}?edge_id=has%20space&region=us`, {
      headers: { authorization: `Bearer ${t.server.edgeKey}` },
    });
    expect(response.statusCode).toBe(400);
    expect(((await response.body.json()) as { msg: string }).msg).toMatch(/^edge_id: /);
  });

  it('starts with the configuration, and pushes a new one within a second of a change', async () => {
    const feed = await openFeed(t.baseUrl, t.server.edgeKey, 'edge_feed_test');
    try {
      const first = await feed.next(isConfig);
      const credential = await t.api('POST', '/credentials', { acl: ['bind:app=web'] });
      const started = Date.now();
      const token = String(credential.body.token);
      const next = await feed.next(
        (message) =>
          message.type === 'config' && message.config.credentials.some((c) => c.id === credential.body.id),
        1000,
      );
      expect(Date.now() - started).toBeLessThan(1000);
      if (first.type !== 'config' || next.type !== 'config') throw new Error('not config messages');
      expect(next.config.revision).not.toBe(first.config.revision);
      const carried = next.config.credentials.find((c) => c.id === credential.body.id);
      // The hash, never the token.
      expect(carried).toEqual({
        id: credential.body.id,
        token_hash: hashToken(token),
        acl: ['bind:app=web'],
      });
      expect(JSON.stringify(next.config)).not.toContain(token);
    } finally {
      feed.close();
    }
  });

  it('makes /tunnel_sessions live: reported sessions are listed until the edge removes them or goes', async () => {
    const feed = await openFeed(t.baseUrl, t.server.edgeKey, 'edge_sessions_test');
    await feed.next(isConfig);
    const put = (sessionId: string, edgeId = 'edge_sessions_test') =>
      request(`${t.baseUrl}${edgeSessionPath(edgeId, sessionId)}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${t.server.edgeKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          agent_version: '1.2.3',
          credential_id: 'cr_0000000000000000000000000001',
          ip: '198.51.100.7',
          os: 'linux',
          metadata: null,
          region: 'us',
          started_at: '2026-11-25T06:00:00Z',
          transport: 'svc/2',
          labels: { app: 'web' },
        }),
      });
    const one = 'ts_0000000000000000000000000001';
    const two = 'ts_0000000000000000000000000002';
    expect((await put(one)).statusCode).toBe(204);
    expect((await put(two)).statusCode).toBe(204);
    // An edge with no open feed cannot report sessions.
    expect((await put('ts_0000000000000000000000000003', 'edge_not_connected')).statusCode).toBe(400);

    const listed = await t.api<{ tunnel_sessions: Array<Record<string, unknown>> }>(
      'GET',
      '/tunnel_sessions',
    );
    expect(listed.body.tunnel_sessions.map((session) => session.id).sort()).toEqual([one, two]);
    expect(listed.body.tunnel_sessions[0]).toMatchObject({
      agent_version: '1.2.3',
      ip: '198.51.100.7',
      transport: 'svc/2',
      credential: { id: 'cr_0000000000000000000000000001' },
    });

    const removed = await request(`${t.baseUrl}${edgeSessionPath('edge_sessions_test', one)}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${t.server.edgeKey}` },
    });
    expect(removed.statusCode).toBe(204);
    expect((await t.api('GET', `/tunnel_sessions/${one}`)).status).toBe(404);

    // The edge's feed ends: its sessions go with it.
    feed.close();
    const status = await eventually(
      async () => (await t.api('GET', `/tunnel_sessions/${two}`)).status,
      (answer) => answer !== 200,
      2000,
    );
    expect(status).toBe(404);
  });

  it('reaches edges connected to another replica (PostgreSQL NOTIFY)', async (context) => {
    if (t.store !== 'postgres') {
      context.skip('replicas share a PostgreSQL database; SQLite has one process');
      return;
    }
    const replica = await t.startReplica();
    const feed = await openFeed(replica.listenUrl, replica.edgeKey, 'edge_on_replica');
    try {
      await feed.next(isConfig);
      // Written through the first replica, seen by the edge of the second.
      const policy = await t.api('POST', '/ip_policies', { description: 'via replica one' });
      const started = Date.now();
      await feed.next(
        (message) =>
          message.type === 'config' && message.config.ip_policies.some((p) => p.id === policy.body.id),
        1000,
      );
      expect(Date.now() - started).toBeLessThan(1000);
      expect(replica.edgeKey).toBe(t.server.edgeKey);

      // A session reported to the first replica (a load balancer's choice), held by the edge whose
      // feed is on the second: listed, and a command sent through the first reaches the edge.
      const sessionId = 'ts_0000000000000000000000000009';
      const reported = await request(`${t.baseUrl}${edgeSessionPath('edge_on_replica', sessionId)}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${t.server.edgeKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          agent_version: '1.0.0',
          credential_id: 'cr_0000000000000000000000000009',
          ip: '192.0.2.1',
          os: 'linux',
          metadata: null,
          region: 'us',
          started_at: '2026-11-25T06:00:00Z',
          transport: 'svc/2',
          labels: {},
        }),
      });
      expect(reported.statusCode).toBe(204);
      const stop = t.api('POST', `/tunnel_sessions/${sessionId}/stop`, {});
      const relayed = await feed.next((message) => message.type === 'command', 2000);
      if (relayed.type !== 'command') throw new Error('not a command');
      expect(relayed.command).toMatchObject({ session_id: sessionId, name: 'stop' });
      const answered = await request(`${replica.listenUrl}${edgeCommandResultPath(relayed.command.id)}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${replica.edgeKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ ok: true }),
      });
      expect(answered.statusCode).toBe(204);
      expect((await stop).status).toBe(204);
    } finally {
      feed.close();
    }
  });
});
