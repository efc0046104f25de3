import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/crypto/ids.js';
import type { TunnelSessionsTable } from '../../src/server/store/tables.js';
import { insertTunnelSession } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

interface TunnelSessionListWire {
  tunnel_sessions: Array<Record<string, unknown>>;
  uri: string;
  next_page_uri: string | null;
}

const COMMANDS = ['restart', 'stop', 'update'] as const;
const UNKNOWN = 'ts_2aaaaaaaaaaaaaaaaaaaaaaaaaa';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t.stop());

const insertSession = (overrides: Partial<TunnelSessionsTable> = {}) => insertTunnelSession(t, overrides);

describe('tunnel sessions', () => {
  it('lists no sessions while no agent is connected', async () => {
    const listed = await t.api<TunnelSessionListWire>('GET', '/tunnel_sessions');
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      tunnel_sessions: [],
      uri: `${t.baseUrl}/tunnel_sessions`,
      next_page_uri: null,
    });
  });

  it('shows every field of a session, omitting metadata when unset, newest first', async () => {
    const viaToken = await insertSession();
    const viaSsh = await insertSession({
      credential_id: newId('sshcr'),
      metadata: '{"rack":"b2"}',
      os: 'darwin',
      region: 'eu',
      transport: 'ssh',
      ip: '2001:db8::7',
    });

    const listed = await t.api<TunnelSessionListWire>('GET', '/tunnel_sessions');
    expect(listed.status).toBe(200);
    const [first, second] = listed.body.tunnel_sessions;
    expect(listed.body.tunnel_sessions).toHaveLength(2);

    expect(Object.keys(first ?? {}).sort()).toEqual([
      'agent_version',
      'credential',
      'id',
      'ip',
      'metadata',
      'os',
      'region',
      'started_at',
      'transport',
      'uri',
    ]);
    expect(first).toEqual({
      id: viaSsh.id,
      uri: `${t.baseUrl}/tunnel_sessions/${viaSsh.id}`,
      agent_version: '3.5.0',
      credential: { id: viaSsh.credential_id, uri: `${t.baseUrl}/ssh_credentials/${viaSsh.credential_id}` },
      ip: '2001:db8::7',
      metadata: '{"rack":"b2"}',
      os: 'darwin',
      region: 'eu',
      started_at: '2024-05-01T12:00:00Z',
      transport: 'ssh',
    });

    expect(Object.keys(second ?? {}).sort()).toEqual([
      'agent_version',
      'credential',
      'id',
      'ip',
      'os',
      'region',
      'started_at',
      'transport',
      'uri',
    ]);
    expect(second).toEqual({
      id: viaToken.id,
      uri: `${t.baseUrl}/tunnel_sessions/${viaToken.id}`,
      agent_version: '3.5.0',
      credential: { id: viaToken.credential_id, uri: `${t.baseUrl}/credentials/${viaToken.credential_id}` },
      ip: '203.0.113.9',
      os: 'linux',
      region: 'us',
      started_at: '2024-05-01T12:00:00Z',
      transport: 'svc/2',
    });
    // Absent, not null: the raw JSON has no metadata key at all.
    const raw = await t.api('GET', `/tunnel_sessions/${viaToken.id}`);
    expect(raw.status).toBe(200);
    expect(raw.text).not.toContain('metadata');
    expect(raw.body).toEqual(second);
    expect((await t.api('GET', `/tunnel_sessions/${viaSsh.id}`)).body).toEqual(first);

    const paged = await t.api<TunnelSessionListWire>('GET', '/tunnel_sessions?limit=1');
    expect(paged.body.tunnel_sessions.map((s) => s.id)).toEqual([viaSsh.id]);
    expect(paged.body.next_page_uri).toBe(`${t.baseUrl}/tunnel_sessions?before_id=${viaSsh.id}&limit=1`);
    const next = await t.api<TunnelSessionListWire>('GET', paged.body.next_page_uri as string);
    expect(next.body.tunnel_sessions.map((s) => s.id)).toEqual([viaToken.id]);
    expect(next.body.next_page_uri).toBeNull();
    for (const limit of ['0', '101', 'abc']) {
      const bad = await t.api('GET', `/tunnel_sessions?limit=${limit}`);
      expect(bad.status, limit).toBe(400);
      expect(bad.body.msg).toMatch(/^limit: /);
    }
  });

  it('answers 404 for an unknown session', async () => {
    const response = await t.api('GET', `/tunnel_sessions/${UNKNOWN}`);
    expect(response.status).toBe(404);
    expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_400', status_code: 404 });
    expect(response.body.msg).toContain(UNKNOWN);
  });

  it('does not pretend to deliver agent commands: 404 for unknown sessions, 400 when no edge holds it', async () => {
    const session = await insertSession();
    for (const command of COMMANDS) {
      const unknown = await t.api('POST', `/tunnel_sessions/${UNKNOWN}/${command}`, {});
      expect(unknown.status, command).toBe(404);
      expect(unknown.body).toMatchObject({ error_code: 'ERR_EDGEWARD_400' });

      for (const body of [{}, undefined]) {
        const known = await t.api('POST', `/tunnel_sessions/${session.id}/${command}`, body);
        expect(known.status, command).toBe(400);
        expect(known.body).toMatchObject({
          error_code: 'ERR_EDGEWARD_900',
          status_code: 400,
          msg: `id: the edge holding tunnel session ${session.id} is not connected; try again`,
        });
      }

      const extra = await t.api('POST', `/tunnel_sessions/${session.id}/${command}`, { force: true });
      expect(extra.status, command).toBe(400);
      expect(extra.body).toMatchObject({ error_code: 'ERR_EDGEWARD_100' });
      expect(extra.body.msg).toBe('force: unknown field');
      const notObject = await t.api('POST', `/tunnel_sessions/${session.id}/${command}`, []);
      expect(notObject.status, command).toBe(400);
    }
    // Still online: nothing stopped it.
    expect((await t.api('GET', `/tunnel_sessions/${session.id}`)).status).toBe(200);
  });

  it('has no DELETE route: sessions end by stopping their agent', async () => {
    const session = await insertSession();
    const response = await t.api('DELETE', `/tunnel_sessions/${session.id}`);
    // "Method not allowed" with the methods the path has, never the 404 of an unknown resource.
    expect(response.status).toBe(405);
    expect(response.body.error_code).toBe('ERR_EDGEWARD_402');
    expect(response.headers.get('allow')).toBe('GET, HEAD');
    expect((await t.api('GET', `/tunnel_sessions/${session.id}`)).status).toBe(200);
  });
});
