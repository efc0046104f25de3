import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretBox } from '../../src/crypto/secret-box.js';
import { loadSecretKey } from '../../src/crypto/secret-key-file.js';
import { condition, OperatorHarness } from '../support/operator-harness.js';
import { idPattern, type TestServer } from '../support/server.js';

/**
 * HTTPSEdgeRoute end to end: a real kube-apiserver, a real edgeward server and the operator as its
 * own process. Routes wait for their HTTPSEdge, IPPolicies and Secrets; the server's state is
 * checked field by field over raw HTTP, and Secret values in its database (sealed) are opened to
 * prove the operator sent exactly what the Secret holds.
 */

const h = new OperatorHarness('routes');
const { kubectl, apply, yamlOf, getCr, eventually, waitFor, waitGone, expectNoDrift } = h;
const { namespace, suffix } = h;
let t: TestServer;

const IDP_METADATA = `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example.com/metadata">
  <md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example.com/sso"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>`;

type Json = Record<string, unknown>;
type RouteRead = Json & {
  id: string;
  edge_id: string;
  backend: { enabled: boolean; backend: { id: string } } | null;
  ip_restriction: { enabled: boolean; ip_policies: { id: string }[] } | null;
  oidc: (Json & { client_secret: null }) | null;
  saml: (Json & { entity_id: string; request_signing_certificate_pem: string }) | null;
};

const edgeYaml = (name: string, host: string) =>
  yamlOf('HTTPSEdge', name, { description: 'routes', hostports: [`${host}:443`] });

const secretYaml = (name: string, data: Record<string, string>) =>
  JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, stringData: data });

const readRoute = async (edgeId: string, id: string) => {
  const response = await t.api<RouteRead>('GET', `/edges/https/${edgeId}/routes/${id}`);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body;
};

/** The route's modules as the server stored them (secrets sealed). */
async function storedModules(routeId: string): Promise<Record<string, Record<string, unknown>>> {
  const row = await t.server.app.edgeward.db
    .selectFrom('https_edge_routes')
    .select('modules')
    .where('id', '=', routeId)
    .executeTakeFirstOrThrow();
  return JSON.parse(row.modules);
}

const edgewardPatches = () =>
  h.metricSum('edgeward_operator_api_requests_total', { api: 'edgeward', method: 'PATCH' });

beforeAll(async () => {
  await h.start();
  t = h.t;
});

afterAll(() => h.stop());

describe('HTTPSEdgeRoute', () => {
  it('waits for its edge and IP policy, configures its modules, follows changes, and deletes with its backend', async () => {
    const route = (spec: Json) =>
      yamlOf('HTTPSEdgeRoute', 'api', {
        edgeRef: { name: 'site' },
        description: 'api route',
        matchType: 'path_prefix',
        match: '/api',
        backend: { labels: { app: 'api' } },
        ipRestriction: { ipPolicyRefs: [{ name: 'office' }] },
        ...spec,
      });
    const headers = {
      requestHeaders: { add: { 'X-Env': 'prod' }, remove: ['Cookie'] },
      responseHeaders: { enabled: false, add: { 'X-Served-By': 'edgeward' } },
    };
    await apply(route(headers));
    let cr = await waitFor('httpsedgeroutes', 'api', 'False', 'ReferenceNotReady');
    expect(condition(cr, 'Ready')?.message).toBe('spec.edgeRef: HTTPSEdge site is not Ready');

    await apply(edgeYaml('site', `site-${suffix}.example.com`));
    const edge = await waitFor('httpsedges', 'site');
    const edgeId = edge.status?.id as string;
    cr = await eventually('the route to wait for its IP policy', async () => {
      const current = await getCr('httpsedgeroutes', 'api');
      return condition(current, 'Ready')?.message?.includes('IPPolicy office') ? current : undefined;
    });
    expect(condition(cr, 'Ready')).toMatchObject({ status: 'False', reason: 'ReferenceNotReady' });
    expect(cr.status?.id).toBeUndefined();

    await apply(yamlOf('IPPolicy', 'office', { rules: [{ cidr: '192.0.2.0/24', action: 'allow' }] }));
    const policyId = (await waitFor('ippolicies', 'office')).status?.id;
    cr = await waitFor('httpsedgeroutes', 'api');
    expect(condition(cr, 'Ready')?.reason).toBe('Created');
    const id = cr.status?.id as string;
    expect(id).toMatch(idPattern('edghtsrt'));
    expect(cr.status?.edgeId).toBe(edgeId);
    expect(cr.status?.uri).toMatch(new RegExp(`/edges/https/${edgeId}/routes/${id}$`));
    const backendId = cr.status?.backendId as string;
    expect(backendId).toMatch(idPattern('bkdtg'));

    const remote = await readRoute(edgeId, id);
    expect(remote).toMatchObject({
      edge_id: edgeId,
      id,
      description: 'api route',
      metadata: '',
      match_type: 'path_prefix',
      match: '/api',
      backend: { enabled: true, backend: { id: backendId } },
      request_headers: { enabled: true, add: { 'X-Env': 'prod' }, remove: ['Cookie'] },
      response_headers: { enabled: false, add: { 'X-Served-By': 'edgeward' }, remove: [] },
    });
    expect(remote.ip_restriction).toEqual({
      enabled: true,
      ip_policies: [expect.objectContaining({ id: policyId })],
    });
    for (const unset of [
      'circuit_breaker',
      'compression',
      'webhook_verification',
      'oauth',
      'saml',
      'oidc',
      'websocket_tcp_converter',
      'user_agent_filter',
      'policy',
    ]) {
      expect(remote[unset], unset).toBeNull();
    }
    expect((await t.api('GET', `/backends/tunnel_group/${backendId}`)).body).toMatchObject({
      labels: { app: 'api' },
    });
    await expectNoDrift('httpsedgeroutes', 'HTTPSEdgeRoute', 'api');

    // A changed module and a dropped one: the server follows, in place.
    await apply(route({ requestHeaders: { add: { 'X-Env': 'staging' } }, compression: {} }));
    cr = await waitFor('httpsedgeroutes', 'api');
    expect(condition(cr, 'Ready')?.reason).toBe('Updated');
    expect(cr.status?.id).toBe(id);
    const updated = await readRoute(edgeId, id);
    expect(updated.request_headers).toEqual({ enabled: true, add: { 'X-Env': 'staging' }, remove: [] });
    expect(updated.response_headers).toBeNull();
    expect(updated.compression).toEqual({ enabled: true });
    expect(updated.ip_restriction?.ip_policies.map((p) => p.id)).toEqual([policyId]);
    await expectNoDrift('httpsedgeroutes', 'HTTPSEdgeRoute', 'api');

    await kubectl(['delete', '-n', namespace, 'httpsedgeroutes.edgeward.dev', 'api', '--wait=false']);
    await waitGone('httpsedgeroutes', 'api');
    expect((await t.api('GET', `/edges/https/${edgeId}/routes/${id}`)).status).toBe(404);
    expect((await t.api('GET', `/backends/tunnel_group/${backendId}`)).status).toBe(404);
    expect((await t.api('GET', `/edges/https/${edgeId}`)).status).toBe(200);
  });

  it('sends an OIDC client secret from a Secret, and sends it again when the Secret is edited', async () => {
    await apply(edgeYaml('sso-edge', `sso-${suffix}.example.com`));
    const edgeId = (await waitFor('httpsedges', 'sso-edge')).status?.id as string;
    const oidc = {
      issuer: 'https://id.example.com/realm',
      clientId: 'edgeward-app',
      clientSecretRef: { name: 'oidc-client', key: 'secret' },
      scopes: ['email'],
    };
    await apply(
      yamlOf('HTTPSEdgeRoute', 'sso', {
        edgeRef: { name: 'sso-edge' },
        matchType: 'exact_path',
        match: '/',
        oidc,
      }),
    );
    let cr = await waitFor('httpsedgeroutes', 'sso', 'False', 'SecretNotFound');
    expect(condition(cr, 'Ready')?.message).toContain('spec.oidc.clientSecretRef');
    expect(cr.status?.id).toBeUndefined();

    const firstSecret = `first-${suffix}-value`;
    // No nudge to the route: the Secret watch reconciles the route naming it.
    await apply(secretYaml('oidc-client', { secret: firstSecret }));
    cr = await waitFor('httpsedgeroutes', 'sso');
    const id = cr.status?.id as string;
    const secretVersion = async () =>
      JSON.parse((await kubectl(['get', '-n', namespace, 'secret', 'oidc-client', '-o', 'json'])).stdout)
        .metadata.resourceVersion as string;
    expect(cr.status?.secretVersions).toEqual({ 'oidc-client/secret': await secretVersion() });

    const remote = await readRoute(edgeId, id);
    expect(remote.oidc).toEqual({
      enabled: true,
      options_passthrough: false,
      cookie_prefix: 'edgeward.',
      inactivity_timeout: 172_800,
      maximum_duration: 2_592_000,
      issuer: 'https://id.example.com/realm',
      client_id: 'edgeward-app',
      client_secret: null,
      scopes: ['email'],
    });
    // The sealed value is what the Secret holds (opened with the server's key and the field's context).
    const box = new SecretBox(loadSecretKey(t.dataDir, t.secretKey));
    const openStored = async () =>
      box.open(
        String((await storedModules(id)).oidc?.client_secret_sealed),
        `https_edge_routes:${id}:oidc.client_secret`,
      );
    expect(await openStored()).toBe(firstSecret);
    expect(JSON.stringify(cr.status)).not.toContain(firstSecret);
    await expectNoDrift('httpsedgeroutes', 'HTTPSEdgeRoute', 'sso');

    const patchesBefore = await edgewardPatches();
    const secondSecret = `second-${suffix}-value`;
    await apply(secretYaml('oidc-client', { secret: secondSecret }));
    const newVersion = await secretVersion();
    cr = await eventually('secretVersions to follow the edited Secret', async () => {
      const current = await getCr('httpsedgeroutes', 'sso');
      const versions = current?.status?.secretVersions as Record<string, string> | undefined;
      return versions?.['oidc-client/secret'] === newVersion ? current : undefined;
    });
    expect(condition(cr, 'Ready')).toMatchObject({ status: 'True', reason: 'Updated' });
    expect(cr.status?.id).toBe(id);
    expect(await edgewardPatches()).toBeGreaterThan(patchesBefore);
    expect(await openStored()).toBe(secondSecret);
    expect((await readRoute(edgeId, id)).oidc?.client_secret).toBeNull();
    const events = (await kubectl(['get', 'events', '-n', namespace, '-o', 'json'])).stdout;
    for (const secret of [firstSecret, secondSecret]) {
      expect(JSON.stringify(cr)).not.toContain(secret);
      expect(events).not.toContain(secret);
    }
    await expectNoDrift('httpsedgeroutes', 'HTTPSEdgeRoute', 'sso');
  });

  it('shows the SAML service-provider URLs in status', async () => {
    const host = `login-${suffix}.example.com`;
    await apply(edgeYaml('login-edge', host));
    const edgeId = (await waitFor('httpsedges', 'login-edge')).status?.id as string;
    await apply(
      yamlOf('HTTPSEdgeRoute', 'login', {
        edgeRef: { name: 'login-edge' },
        matchType: 'path_prefix',
        match: '/app',
        saml: { idpMetadata: IDP_METADATA, authorizedGroups: ['staff'] },
      }),
    );
    const cr = await waitFor('httpsedgeroutes', 'login', 'True', undefined, 60_000);
    const id = cr.status?.id as string;
    const saml = (await readRoute(edgeId, id)).saml;
    expect(saml).toMatchObject({ idp_metadata: IDP_METADATA, authorized_groups: ['staff'] });
    expect(cr.status?.saml).toEqual({
      entityId: `https://${host}/saml/${id}/metadata`,
      assertionConsumerServiceUrl: `https://${host}/saml/${id}/acs`,
      singleLogoutUrl: `https://${host}/saml/${id}/slo`,
      metadataUrl: `https://${host}/saml/${id}/metadata`,
      requestSigningCertificatePem: saml?.request_signing_certificate_pem,
    });
    expect(saml?.request_signing_certificate_pem).toContain('-----BEGIN CERTIFICATE-----');
    await expectNoDrift('httpsedgeroutes', 'HTTPSEdgeRoute', 'login');

    // The URLs are the edge's own: new hostports move them, and the route's status follows.
    const newHost = `signin-${suffix}.example.com`;
    await apply(edgeYaml('login-edge', newHost));
    const moved = await eventually('status.saml to follow the edge hostports', async () => {
      const current = await getCr('httpsedgeroutes', 'login');
      const urls = current?.status?.saml as { metadataUrl?: string } | undefined;
      return urls?.metadataUrl === `https://${newHost}/saml/${id}/metadata` ? current : undefined;
    });
    expect(moved.status?.id).toBe(id);
    expect((await readRoute(edgeId, id)).saml?.entity_id).toBe(`https://${newHost}/saml/${id}/metadata`);
  });

  it('follows its HTTPSEdge when the edge is recreated on the server with a new id', async () => {
    await apply(edgeYaml('moving', `moving-${suffix}.example.com`));
    const firstEdge = (await waitFor('httpsedges', 'moving')).status?.id as string;
    await apply(
      yamlOf('HTTPSEdgeRoute', 'moving', {
        edgeRef: { name: 'moving' },
        matchType: 'exact_path',
        match: '/health',
        compression: {},
      }),
    );
    const first = await waitFor('httpsedgeroutes', 'moving');
    expect(first.status?.edgeId).toBe(firstEdge);

    // Deleted on the server (its routes go with it): the HTTPSEdge recreates it, the route follows.
    expect((await t.api('DELETE', `/edges/https/${firstEdge}`)).status).toBe(204);
    await kubectl([
      'label',
      '--overwrite',
      '-n',
      namespace,
      'httpsedges.edgeward.dev',
      'moving',
      'resync=recreate',
    ]);
    const secondEdge = await eventually('the edge recreated with a new id', async () => {
      const id = (await getCr('httpsedges', 'moving'))?.status?.id;
      return id && id !== firstEdge ? id : undefined;
    });
    const moved = await eventually('the route on the new edge', async () => {
      const cr = await getCr('httpsedgeroutes', 'moving');
      return cr?.status?.edgeId === secondEdge && condition(cr, 'Ready')?.status === 'True' ? cr : undefined;
    });
    const id = moved.status?.id as string;
    expect(id).not.toBe(first.status?.id);
    expect(await readRoute(secondEdge, id)).toMatchObject({
      edge_id: secondEdge,
      match: '/health',
      compression: { enabled: true },
    });
  });
});
