import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, headerOf, run, seenAt, useHarness } from '../support/https-modules-harness.js';
import { OpensslWorkspace } from '../support/openssl.js';

/**
 * HTTPS route and edge modules that decide who gets in, end to end: configured through the API,
 * enforced by a real edge, asserted at the client (curl) and at the service behind the agent.
 */
const h = useHarness();
let ssl: OpensslWorkspace;

beforeAll(() => {
  ssl = new OpensslWorkspace();
});

afterAll(() => ssl?.cleanup());

const ready = { match_type: 'exact_path', match: '/ready' } as const;

async function waitReady(host: string) {
  const result = await eventually(
    () => h.curl(host, '/ready'),
    (r) => r.status === 200,
  );
  expect(result.status, result.stderr).toBe(200);
}

describe('HTTPS route modules: access', () => {
  it('ip_restriction: a deny rule for the client answers 403 ip-denied; an allow rule lets it in', async () => {
    const denyPolicy = await h.create('/ip_policies', {});
    await h.create('/ip_policy_rules', { ip_policy_id: denyPolicy.id, cidr: '127.0.0.1/32', action: 'deny' });
    const allowPolicy = await h.create('/ip_policies', {});
    await h.create('/ip_policy_rules', {
      ip_policy_id: allowPolicy.id,
      cidr: '127.0.0.1/32',
      action: 'allow',
    });
    const otherPolicy = await h.create('/ip_policies', {});
    await h.create('/ip_policy_rules', { ip_policy_id: otherPolicy.id, cidr: '10.0.0.0/8', action: 'allow' });
    await h.httpsEdge('ip.modules.test', [
      {
        match_type: 'path_prefix',
        match: '/denied',
        modules: { ip_restriction: { ip_policy_ids: [denyPolicy.id] } },
      },
      {
        match_type: 'path_prefix',
        match: '/allowed',
        modules: { ip_restriction: { ip_policy_ids: [allowPolicy.id] } },
      },
      // An allow list that does not name the client keeps it out too.
      {
        match_type: 'path_prefix',
        match: '/others',
        modules: { ip_restriction: { ip_policy_ids: [otherPolicy.id] } },
      },
      ready,
    ]);
    await waitReady('ip.modules.test');

    const denied = await h.curl('ip.modules.test', '/denied');
    expect(denied.status).toBe(403);
    expect(headerOf(denied, 'edgeward-error')).toBe('ip-denied');
    const others = await h.curl('ip.modules.test', '/others');
    expect(others.status).toBe(403);
    expect(headerOf(others, 'edgeward-error')).toBe('ip-denied');
    const allowed = await h.curl('ip.modules.test', '/allowed');
    expect(allowed.status).toBe(200);
    expect(allowed.body).toBe('service: GET /allowed');
    expect(seenAt(h.seen, '/denied')).toHaveLength(0);
    expect(seenAt(h.seen, '/others')).toHaveLength(0);
    expect(seenAt(h.seen, '/allowed')).toHaveLength(1);
  });

  it('mutual_tls: the handshake needs a client certificate from one of the edge’s CAs', async () => {
    const clientCa = ssl.caAndLeaf('client.modules.test', 'modules client CA');
    const otherCa = ssl.caAndLeaf('client.modules.test', 'modules other CA');
    const authority = await h.create('/certificate_authorities', { ca_pem: clientCa.ca.pem });
    await h.httpsEdge('mtls.modules.test', [{ match_type: 'path_prefix', match: '/' }], {
      edgeModules: { mutual_tls: { certificate_authority_ids: [authority.id] } },
    });
    const withCert = ['--cert', clientCa.leaf.path, '--key', clientCa.leaf.key.path];
    const accepted = await eventually(
      () => h.curl('mtls.modules.test', '/with-cert', withCert),
      (r) => r.status === 200,
    );
    expect(accepted.status, accepted.stderr).toBe(200);
    expect(accepted.body).toBe('service: GET /with-cert');

    const none = await h.curl('mtls.modules.test', '/no-cert');
    expect(none.code).not.toBe(0);
    expect(none.status).toBe(0);
    const other = await h.curl('mtls.modules.test', '/other-ca', [
      '--cert',
      otherCa.leaf.path,
      '--key',
      otherCa.leaf.key.path,
    ]);
    expect(other.code).not.toBe(0);
    expect(other.status).toBe(0);
    // openssl's view: the edge asks for a certificate from the uploaded CA, and answers a request
    // sent without one with the TLS 1.3 alert, never with HTTP.
    const { stdout } = await run('sh', [
      '-c',
      `printf 'GET /s-client HTTP/1.1\\r\\nHost: mtls.modules.test\\r\\n\\r\\n' | timeout 5 openssl s_client -ign_eof -connect 127.0.0.1:${h.edge.edge.tlsPort} -servername mtls.modules.test -alpn http/1.1 2>&1; true`,
    ]);
    expect(stdout).toMatch(/Acceptable client certificate CA names\s+CN ?= ?modules client CA/);
    expect(stdout).toMatch(/alert certificate required/);
    expect(stdout).not.toMatch(/^HTTP\/1\.1 \d{3}/m);
    expect(h.seen.map((request) => request.url)).toEqual(['/with-cert']);
  });

  it('tls_termination min_version 1.3: a TLS 1.2 client is refused, a TLS 1.3 one served', async () => {
    await h.httpsEdge('tls13.modules.test', [{ match_type: 'path_prefix', match: '/' }], {
      // The documented form, without `terminate_at` (HTTPS edges always terminate at the edge).
      edgeModules: { tls_termination: { min_version: '1.3' } },
    });
    const modern = await eventually(
      () => h.curl('tls13.modules.test', '/modern', ['--tlsv1.3']),
      (r) => r.status === 200,
    );
    expect(modern.status, modern.stderr).toBe(200);
    const old = await h.curl('tls13.modules.test', '/old', ['--tls-max', '1.2']);
    expect(old.code).toBe(35);
    expect(old.status).toBe(0);
    expect(h.seen.map((request) => request.url)).toEqual(['/modern']);
  });

  it('user_agent_filter: a denied User-Agent gets 403, allowed ones (and allow exceptions) pass', async () => {
    await h.httpsEdge('ua.modules.test', [
      {
        match_type: 'path_prefix',
        match: '/',
        modules: { user_agent_filter: { deny: ['[Bb]ot'], allow: ['^GoodBot/'] } },
      },
    ]);
    const allowed = await eventually(
      () => h.curl('ua.modules.test', '/person', ['-A', 'Mozilla/5.0 (X11; Linux)']),
      (r) => r.status === 200,
    );
    expect(allowed.status).toBe(200);
    const denied = await h.curl('ua.modules.test', '/bot', ['-A', 'EvilBot/1.0']);
    expect(denied.status).toBe(403);
    expect(headerOf(denied, 'edgeward-error')).toBe('user-agent-denied');
    const exception = await h.curl('ua.modules.test', '/good-bot', ['-A', 'GoodBot/2.1']);
    expect(exception.status).toBe(200);
    expect(h.seen.map((request) => [request.url, request.headers['user-agent']])).toEqual([
      ['/person', 'Mozilla/5.0 (X11; Linux)'],
      ['/good-bot', 'GoodBot/2.1'],
    ]);
  });

  it('webhook_verification: signed GitHub and Stripe deliveries reach the service intact; bad ones get 403', async () => {
    const githubSecret = 'github-webhook-secret-3d9c';
    const stripeSecret = 'whsec_modules_test_0a7f2e91';
    await h.httpsEdge('hooks.modules.test', [
      {
        match_type: 'exact_path',
        match: '/github',
        modules: { webhook_verification: { provider: 'github', secret: githubSecret } },
      },
      {
        match_type: 'exact_path',
        match: '/stripe',
        modules: { webhook_verification: { provider: 'stripe', secret: stripeSecret } },
      },
      ready,
    ]);
    await waitReady('hooks.modules.test');
    const body = JSON.stringify({ action: 'opened', number: 7, text: 'ünïcödé & spaces' });
    const post = (path: string, headers: string[]) =>
      h.curl('hooks.modules.test', path, [
        '-X',
        'POST',
        '-H',
        'content-type: application/json',
        ...headers.flatMap((header) => ['-H', header]),
        '--data-binary',
        body,
      ]);
    const githubSignature = `sha256=${createHmac('sha256', githubSecret).update(body).digest('hex')}`;
    const github = await post('/github', [
      `X-Hub-Signature-256: ${githubSignature}`,
      'X-GitHub-Event: pull_request',
    ]);
    expect(github.status, github.headers + github.body).toBe(200);
    const forged = await post('/github', [
      `X-Hub-Signature-256: sha256=${createHmac('sha256', 'not the secret').update(body).digest('hex')}`,
    ]);
    expect(forged.status).toBe(403);
    expect(headerOf(forged, 'edgeward-error')).toBe('webhook-signature');
    const unsigned = await post('/github', []);
    expect(unsigned.status).toBe(403);

    const t = Math.floor(Date.now() / 1000);
    const stripeSignature = createHmac('sha256', stripeSecret).update(`${t}.${body}`).digest('hex');
    const stripe = await post('/stripe', [`Stripe-Signature: t=${t},v1=${stripeSignature}`]);
    expect(stripe.status, stripe.body).toBe(200);
    // Signed for another body: the edge checks what it forwards.
    const otherBody = createHmac('sha256', stripeSecret).update(`${t}.{}`).digest('hex');
    const mismatched = await post('/stripe', [`Stripe-Signature: t=${t},v1=${otherBody}`]);
    expect(mismatched.status).toBe(403);
    const stale = t - 3600;
    const old = createHmac('sha256', stripeSecret).update(`${stale}.${body}`).digest('hex');
    expect((await post('/stripe', [`Stripe-Signature: t=${stale},v1=${old}`])).status).toBe(403);

    const delivered = h.seen.filter((request) => request.method === 'POST');
    expect(delivered.map((request) => request.url)).toEqual(['/github', '/stripe']);
    for (const request of delivered) {
      expect(request.body.equals(Buffer.from(body))).toBe(true);
      expect(request.headers['content-length']).toBe(String(Buffer.byteLength(body)));
    }
    expect(delivered[0]?.headers['x-hub-signature-256']).toBe(githubSignature);
  });

  it('fails closed: a route whose stored module the edge cannot read answers 503 route-misconfigured', async () => {
    const { routes } = await h.httpsEdge('broken.modules.test', [
      { match_type: 'path_prefix', match: '/broken' },
      ready,
    ]);
    await waitReady('broken.modules.test');
    expect((await h.curl('broken.modules.test', '/broken')).status).toBe(200);
    const routeId = String(routes[0]?.id);
    const db = h.t.server.app.edgeward.db;
    const row = await db
      .selectFrom('https_edge_routes')
      .select('modules')
      .where('id', '=', routeId)
      .executeTakeFirstOrThrow();
    // A known module whose stored value no schema accepts, as a bad migration or a manual edit leaves it.
    const garbled = { ...JSON.parse(row.modules), user_agent_filter: { deny: 'not a list', colour: 'red' } };
    await db
      .updateTable('https_edge_routes')
      .set({ modules: JSON.stringify(garbled) })
      .where('id', '=', routeId)
      .execute();
    // Any write pushes a new snapshot to the edge.
    await h.create('/ip_policies', {});
    const broken = await eventually(
      () => h.curl('broken.modules.test', '/broken/page'),
      (r) => r.status === 503,
    );
    expect(broken.status).toBe(503);
    expect(headerOf(broken, 'edgeward-error')).toBe('route-misconfigured');
    expect(broken.body).not.toContain('not a list');
    // Polling reached the service until the snapshot arrived; from now on nothing does.
    h.seen.length = 0;
    const again = await h.curl('broken.modules.test', '/broken/again', ['-A', 'EvilBot/1.0']);
    expect(again.status).toBe(503);
    // The other route of the edge serves on.
    expect((await h.curl('broken.modules.test', '/ready')).status).toBe(200);
    const metrics = await h.edge.edge.metrics.registry.metrics();
    expect(metrics).toMatch(/^edgeward_edge_routes_unreadable 1$/m);
    expect(seenAt(h.seen, '/broken/again')).toHaveLength(0);
  });
});
