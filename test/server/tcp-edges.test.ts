import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idPattern, startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let policyId: string;
beforeAll(async () => {
  t = await startTestServer();
  policyId = (await t.api('POST', '/ip_policies', {})).body.id as string;
});
afterAll(async () => t.stop());

async function reserve(): Promise<{ id: string; addr: string }> {
  return (await t.api<{ id: string; addr: string }>('POST', '/reserved_addrs', { region: 'eu' })).body;
}

describe('TCP edges', () => {
  it('serves reserved addresses with backend, ip_restriction and policy modules', async () => {
    const addr = await reserve();
    const created = await t.api('POST', '/edges/tcp', {
      description: 'ssh bastion',
      hostports: [addr.addr],
      ip_restriction: { ip_policy_ids: [policyId] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(Object.keys(created.body).sort()).toEqual([
      'backend',
      'created_at',
      'description',
      'hostports',
      'id',
      'ip_restriction',
      'metadata',
      'policy',
      'uri',
    ]);
    expect(created.body.id).toMatch(idPattern('edgtcp'));
    expect(created.body.uri).toBe(`${t.baseUrl}/edges/tcp/${created.body.id}`);
    expect(created.body).toMatchObject({ hostports: [addr.addr], backend: null, policy: null });
    expect(created.body.ip_restriction).toEqual({
      enabled: true,
      ip_policies: [{ id: policyId, uri: `${t.baseUrl}/ip_policies/${policyId}` }],
    });
  });

  it('refuses hostports that are not reserved addresses, and addresses another edge serves', async () => {
    const unreserved = await t.api('POST', '/edges/tcp', { hostports: ['eu.tcp.edgeward.dev:1'] });
    expect(unreserved.status).toBe(400);
    expect(unreserved.body.msg).toMatch(
      /^hostports\[0\]: 'eu\.tcp\.edgeward\.dev:1' is not a reserved address of this account/,
    );
    const addr = await reserve();
    const first = (await t.api('POST', '/edges/tcp', { hostports: [addr.addr] })).body;
    const second = await t.api('POST', '/edges/tcp', { hostports: [addr.addr] });
    expect(second.status).toBe(409);
    expect(second.body.msg).toContain(`already served by edge ${first.id}`);
  });

  it('keeps a reserved address while an edge serves it, and frees it when the edge goes', async () => {
    const addr = await reserve();
    const edge = (await t.api('POST', '/edges/tcp', { hostports: [addr.addr] })).body;
    const refused = await t.api('DELETE', `/reserved_addrs/${addr.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.msg).toBe(`reserved address ${addr.id} (${addr.addr}) is served by edge ${edge.id}`);
    // Moving the edge to another address releases the first one.
    const other = await reserve();
    const moved = await t.api('PATCH', `/edges/tcp/${edge.id}`, { hostports: [other.addr] });
    expect(moved.status).toBe(200);
    expect(moved.body.hostports).toEqual([other.addr]);
    expect((await t.api('DELETE', `/reserved_addrs/${addr.id}`)).status).toBe(204);
    expect((await t.api('DELETE', `/edges/tcp/${edge.id}`)).status).toBe(204);
    expect((await t.api('DELETE', `/reserved_addrs/${other.id}`)).status).toBe(204);
  });

  it('puts the policy module with outbound null and action config null when not given', async () => {
    const edge = (await t.api('POST', '/edges/tcp', {})).body;
    const put = await t.api('PUT', `/edges/tcp/${edge.id}/policy`, {
      inbound: [{ name: 'deny-all', expressions: ['true'], actions: [{ type: 'deny' }] }],
    });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({
      enabled: true,
      inbound: [{ name: 'deny-all', expressions: ['true'], actions: [{ type: 'deny', config: null }] }],
      outbound: null,
    });
    expect((await t.api('GET', `/edges/tcp/${edge.id}/policy`)).body).toEqual(put.body);
    expect((await t.api('DELETE', `/edges/tcp/${edge.id}/policy`)).status).toBe(204);
    expect((await t.api('GET', `/edges/tcp/${edge.id}/policy`)).status).toBe(404);
    // TCP edges have no TLS modules.
    expect((await t.api('PUT', `/edges/tcp/${edge.id}/tls_termination`, {})).status).toBe(404);
    const unknown = await t.api('POST', '/edges/tcp', {
      mutual_tls: { certificate_authority_ids: ['ca_x'] },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.msg).toBe('mutual_tls: unknown field');
  });
});
