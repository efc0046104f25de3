import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/crypto/tokens.js';
import { AnswerDroppingProxy } from '../support/answer-dropping-proxy.js';
import { condition, OperatorHarness, type Secret, secretValue } from '../support/operator-harness.js';
import { idPattern, type TestServer } from '../support/server.js';

/**
 * A create whose answer is lost (the server made the resource, the operator never heard) followed
 * by a change of its inputs before the retry: the operator, the CRDs and the server are real, a
 * proxy between the operator and the server drops the answer. Exactly one server resource must
 * exist, tracked by the CR, at the new spec; or none once the CR is deleted instead.
 */

const h = new OperatorHarness('lost-create');
const { apply, yamlOf, getCr, getSecret, eventually, waitFor, waitGone, suffix } = h;
let t: TestServer;
let proxy: AnswerDroppingProxy;

interface TlsEdgeRead {
  id: string;
  description: string;
  hostports: string[];
}

async function tlsEdgesOn(hostport: string): Promise<TlsEdgeRead[]> {
  const { status, body } = await t.api<{ tls_edges: TlsEdgeRead[] }>('GET', '/edges/tls?limit=100');
  expect(status).toBe(200);
  return body.tls_edges.filter((edge) => edge.hostports.includes(hostport));
}

/** The CR's last reconcile of its current generation failed (the server was unreachable). */
const failedAtCurrentGeneration = (name: string) =>
  eventually(`tlsedges/${name} failing at its current generation`, async () => {
    const cr = await getCr('tlsedges', name);
    const synced = condition(cr, 'Synced');
    return cr && synced?.status === 'False' && synced.observedGeneration === cr.metadata.generation
      ? cr
      : undefined;
  });

beforeAll(async () => {
  await h.start({
    operatorArgs: async (server) => {
      proxy = await new AnswerDroppingProxy(server.baseUrl).start();
      // Given after the harness's own --api-url: the last one counts.
      return ['--api-url', proxy.url];
    },
  });
  t = h.t;
});

afterAll(async () => {
  await h.stop();
  await proxy?.stop();
});

describe('a create whose answer was lost', () => {
  it('then a spec change: the resource it made is found, tracked and updated, never a second one', async () => {
    const hostport = `lost-${suffix}.example.com:443`;
    proxy.loseAnswers('POST', '/edges/tls');
    await apply(yamlOf('TLSEdge', 'lost', { description: 'first', hostports: [hostport] }));
    const [made] = await eventually(
      'the lost create made on the server',
      async () => {
        const edges = await tlsEdgesOn(hostport);
        return edges.length > 0 ? edges : undefined;
      },
      60_000,
    );
    expect(made?.description).toBe('first');
    await failedAtCurrentGeneration('lost');

    // The spec changes while the server is still out of reach: the create's inputs are not the
    // lost one's any more (before the fix: a new Idempotency-Key, a second create, refused 409 for
    // the hostport the first one holds, and the first edge untracked).
    await apply(yamlOf('TLSEdge', 'lost', { description: 'second', hostports: [hostport] }));
    await failedAtCurrentGeneration('lost');
    proxy.release();

    const cr = await waitFor('tlsedges', 'lost');
    expect(cr.metadata.generation).toBe(2);
    expect(cr.status?.id).toMatch(idPattern('edgtls'));
    expect(cr.status?.id).toBe(made?.id);
    expect(condition(cr, 'Ready')?.reason).toBe('Created');
    const edges = await tlsEdgesOn(hostport);
    expect(edges).toEqual([expect.objectContaining({ id: made?.id, description: 'second' })]);
    // While the lost create was unanswered, nothing but it (its key: its inputs) was sent again,
    // the attempts after the spec change included.
    const keys = proxy.matched.map((request) => request.idempotencyKey);
    expect(proxy.matched.filter((request) => request.fate === 'refused').length).toBeGreaterThan(0);
    expect(keys[0]).toBe(cr.metadata.uid);
    expect(new Set(keys)).toEqual(new Set([keys[0]]));

    await h.delete('tlsedges', 'lost');
    await waitGone('tlsedges', 'lost');
    expect(await tlsEdgesOn(hostport)).toEqual([]);
  });

  it('then a restart and a spec change: the server names what the key made; it is tracked and updated', async () => {
    const hostport = `restart-${suffix}.example.com:443`;
    proxy.loseAnswers('POST', '/edges/tls');
    await apply(yamlOf('TLSEdge', 'restarted', { description: 'first', hostports: [hostport] }));
    const [made] = await eventually('the lost create made on the server', async () => {
      const edges = await tlsEdgesOn(hostport);
      return edges.length > 0 ? edges : undefined;
    });
    await failedAtCurrentGeneration('restarted');
    // The operator dies with its memory of the unanswered create; the spec changes while it is down.
    await h.stopOperator('SIGKILL');
    proxy.release();
    await apply(yamlOf('TLSEdge', 'restarted', { description: 'second', hostports: [hostport] }));
    h.startOperator();

    const cr = await waitFor('tlsedges', 'restarted');
    expect(cr.status?.id).toBe(made?.id);
    expect(cr.metadata.generation).toBe(2);
    expect(condition(cr, 'Ready')).toMatchObject({ reason: 'Updated', observedGeneration: 2 });
    expect(await tlsEdgesOn(hostport)).toEqual([
      expect.objectContaining({ id: made?.id, description: 'second' }),
    ]);
    // It says what happened, as a Warning on the object.
    await eventually('a LostCreateFound event on tlsedges/restarted', async () => {
      const { stdout } = await h.kubectl(['get', 'events', '-n', h.namespace, '-o', 'json']);
      const { items } = JSON.parse(stdout) as {
        items: Array<{ reason: string; type: string; message: string; involvedObject: { name: string } }>;
      };
      return items.find(
        (event) =>
          event.involvedObject.name === 'restarted' &&
          event.reason === 'LostCreateFound' &&
          event.type === 'Warning' &&
          event.message.includes(`tracking ${made?.id}`),
      );
    });
  });

  it('a credential after a restart and a spec change: the one whose token was lost is replaced and deleted', async () => {
    const description = `lost-credential-${suffix}`;
    const credentialsNamed = async () => {
      const { body } = await t.api<{ credentials: Array<{ id: string; description: string }> }>(
        'GET',
        '/credentials?limit=100',
      );
      return body.credentials.filter((credential) => credential.description.startsWith(description));
    };
    proxy.loseAnswers('POST', '/credentials');
    await apply(yamlOf('TunnelCredential', 'lost-token', { description, acl: ['bind:*.example.com'] }));
    const [made] = await eventually('the lost credential made on the server', async () => {
      const found = await credentialsNamed();
      return found.length > 0 ? found : undefined;
    });
    await eventually('tunnelcredentials/lost-token failing', async () =>
      condition(await getCr('tunnelcredentials', 'lost-token'), 'Synced')?.status === 'False'
        ? true
        : undefined,
    );
    await h.stopOperator('SIGKILL');
    proxy.release();
    await apply(
      yamlOf('TunnelCredential', 'lost-token', {
        description: `${description} v2`,
        acl: ['bind:*.example.com'],
      }),
    );
    h.startOperator();

    const cr = await waitFor('tunnelcredentials', 'lost-token');
    const id = cr.status?.id as string;
    expect(id).not.toBe(made?.id);
    // One credential: the new one, whose token is the Secret's; the one with the lost token is gone.
    expect(await credentialsNamed()).toEqual([
      expect.objectContaining({ id, description: `${description} v2` }),
    ]);
    const token = secretValue((await getSecret('lost-token-token')) as Secret, 'token');
    const [row] = await t.server.app.edgeward.db
      .selectFrom('credentials')
      .select(['token_hash'])
      .where('id', '=', id)
      .execute();
    expect(row?.token_hash).toBe(hashToken(token));
  });

  it('then the CR deleted before any retry: the resource it made is deleted with it', async () => {
    const hostport = `gone-${suffix}.example.com:443`;
    proxy.loseAnswers('POST', '/edges/tls');
    await apply(yamlOf('TLSEdge', 'gone', { description: 'made', hostports: [hostport] }));
    await eventually('the lost create made on the server', async () =>
      (await tlsEdgesOn(hostport)).length > 0 ? true : undefined,
    );
    await failedAtCurrentGeneration('gone');
    await h.delete('tlsedges', 'gone');
    proxy.release();
    await waitGone('tlsedges', 'gone');
    expect(await tlsEdgesOn(hostport)).toEqual([]);
  });
});
