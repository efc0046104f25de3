import { X509Certificate } from 'node:crypto';
import type { LookupFunction } from 'node:net';
import { Agent, request } from 'undici';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type LoopbackTls, loopbackTls, startTestIdp, type TestIdp } from '../support/auth-idp.js';
import { eventually, headerOf, seenAt, useHarness } from '../support/https-modules-harness.js';

/**
 * The sign-in route modules through a real edge: OIDC against a real OpenID provider (the test IdP
 * of the module's unit tests) with a browser-like client, and SAML's service-provider metadata.
 */
const tls: LoopbackTls = loopbackTls();
// The edge verifies the IdP (https://127.0.0.1:<port>) with the IdP's certificate.
const h = useHarness({ identityProviderCas: [tls.cert] });
const idps: TestIdp[] = [];
const browsers: EdgeBrowser[] = [];

afterEach(async () => {
  await Promise.all(browsers.splice(0).map((browser) => browser.close()));
});

afterAll(async () => {
  await Promise.all(idps.map((idp) => idp.close()));
});

const PAGE_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

interface Page {
  status: number;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * A browser in small (after auth-browser.ts): one cookie jar per host name, redirects followed by
 * hand, the test IdP's forms filled in. Names of `*.modules.test` resolve to 127.0.0.1, where the
 * edge listens; the edge's certificate is its own generated one, so it is not verified here (the
 * edge verifying the IdP is what this test is about).
 */
class EdgeBrowser {
  readonly #toEdge: Agent;
  readonly #toIdp: Agent;
  readonly #jar = new Map<string, Map<string, string>>();

  constructor(idpCa: string) {
    const lookup: LookupFunction = (_hostname, options, callback) => {
      if (options.all) callback(null, [{ address: '127.0.0.1', family: 4 }]);
      else callback(null, '127.0.0.1', 4);
    };
    this.#toEdge = new Agent({ connect: { lookup, rejectUnauthorized: false } });
    this.#toIdp = new Agent({ connect: { ca: idpCa } });
  }

  cookie(url: string, name: string): string | undefined {
    return this.#jar.get(new URL(url).hostname)?.get(name);
  }

  async fetch(
    url: string,
    options: { form?: Record<string, string>; headers?: Record<string, string> } = {},
  ): Promise<Page> {
    const target = new URL(url);
    const headers: Record<string, string> = { accept: PAGE_ACCEPT, ...options.headers };
    const cookies = [...(this.#jar.get(target.hostname) ?? new Map<string, string>())]
      .map(([name, value]) => `${name}=${value}`)
      .join('; ');
    if (cookies) headers.cookie = cookies;
    let body: string | undefined;
    if (options.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(options.form).toString();
    }
    const response = await request(target, {
      method: options.form ? 'POST' : 'GET',
      headers,
      body,
      dispatcher: target.hostname.endsWith('.modules.test') ? this.#toEdge : this.#toIdp,
    });
    const text = await response.body.text();
    const setCookies = response.headers['set-cookie'];
    for (const line of setCookies === undefined ? [] : [setCookies].flat()) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      const jar = this.#jar.get(target.hostname) ?? new Map<string, string>();
      const value = pair.slice(eq + 1);
      if (value === '' || /max-age=0/i.test(line)) jar.delete(pair.slice(0, eq));
      else jar.set(pair.slice(0, eq), value);
      this.#jar.set(target.hostname, jar);
    }
    return { status: response.statusCode, url: target.href, headers: response.headers, body: text };
  }

  async close(): Promise<void> {
    await this.#toEdge.close();
    await this.#toIdp.close();
  }
}

function formOf(html: string): { action: string; fields: Record<string, string> } | undefined {
  const form = /<form[^>]*action="([^"]+)"[^>]*method="post"[^>]*>([\s\S]*?)<\/form>/i.exec(html);
  if (!form) return undefined;
  const fields: Record<string, string> = {};
  for (const input of (form[2] ?? '').matchAll(/<input[^>]*type="hidden"[^>]*>/gi)) {
    const name = /name="([^"]+)"/.exec(input[0])?.[1];
    if (name) fields[name] = /value="([^"]*)"/.exec(input[0])?.[1] ?? '';
  }
  return { action: (form[1] ?? '').replace(/&amp;/g, '&'), fields };
}

/** Follows redirects and signs in as `login` at the IdP's forms, until a page. */
async function browse(browser: EdgeBrowser, url: string, idp: string, login: string) {
  const visited = [url];
  let page = await browser.fetch(url);
  for (let step = 0; step < 20; step++) {
    const location = page.headers.location;
    if (page.status >= 300 && page.status < 400 && typeof location === 'string') {
      const next = new URL(location, page.url).href;
      visited.push(next);
      page = await browser.fetch(next);
      continue;
    }
    const here = new URL(page.url);
    const form = here.origin === idp && page.status === 200 ? formOf(page.body) : undefined;
    if (!form) return { page, visited };
    const fields = { ...form.fields };
    if (fields.prompt === 'login') Object.assign(fields, { login, password: 'any' });
    page = await browser.fetch(new URL(form.action, here).href, { form: fields });
  }
  throw new Error(`no page after 20 steps: ${visited.join(' → ')}`);
}

describe('HTTPS route modules: sign-in', () => {
  it('oidc: protected page → IdP login → callback → the service sees the signed-in user, never a forged one', async () => {
    const host = 'oidc.modules.test';
    const origin = `https://${host}:${h.edge.edge.tlsPort}`;
    const { edge, routes } = await h.httpsEdge(host, [{ match_type: 'path_prefix', match: '/' }]);
    const routeId = String(routes[0]?.id);
    const callback = `${origin}/_edgeward/auth/${routeId}/callback`;
    const idp = await startTestIdp({
      tls,
      redirectUris: [callback],
      accounts: { alice: { email: 'alice@example.com', email_verified: true, name: 'Alice Example' } },
    });
    idps.push(idp);
    const put = await h.t.api('PUT', `/edges/https/${edge.id}/routes/${routeId}/oidc`, {
      issuer: idp.issuer,
      client_id: idp.clientId,
      client_secret: idp.clientSecret,
      cookie_prefix: 'ew-test.',
    });
    expect(put.status, put.text).toBe(200);
    // API clients (no text/html in Accept) get 401 rather than a redirect, once the module is on.
    const unauthenticated = await eventually(
      () => h.curl(host, '/app/data'),
      (r) => r.status === 401,
    );
    expect(unauthenticated.status).toBe(401);
    // Polling reached the service until the module arrived; from now on only signed-in requests do.
    h.seen.length = 0;
    expect((await h.curl(host, '/app/data')).status).toBe(401);
    expect(seenAt(h.seen, '/app/data')).toHaveLength(0);

    const browser = new EdgeBrowser(tls.cert);
    browsers.push(browser);
    const { page, visited } = await browse(browser, `${origin}/app/page?x=1`, idp.issuer, 'alice');
    expect(page.status, page.body).toBe(200);
    expect(page.body).toBe('service: GET /app/page?x=1');
    expect(page.url).toBe(`${origin}/app/page?x=1`);
    const authorize = new URL(visited[1] ?? '');
    expect(authorize.origin).toBe(idp.issuer);
    expect(authorize.searchParams.get('redirect_uri')).toBe(callback);
    expect(visited.some((url) => url.startsWith(`${callback}?`))).toBe(true);
    expect(browser.cookie(origin, 'ew-test.session')).toBeTruthy();
    // Only the signed-in request reached the service, with the identity the edge vouches for.
    expect(h.seen.map((request) => request.url)).toEqual(['/app/page?x=1']);
    expect(h.seen[0]?.headers).toMatchObject({
      'edgeward-auth-user-id': 'alice',
      'edgeward-auth-user-email': 'alice@example.com',
      'edgeward-auth-user-name': 'Alice Example',
    });
    expect(h.seen[0]?.headers.cookie ?? '').not.toContain('ew-test.auth_');

    // With a session, a client's own identity headers are replaced by the edge's.
    const forged = await browser.fetch(`${origin}/app/again`, {
      headers: { 'edgeward-auth-user-email': 'mallory@example.com', 'edgeward-auth-user-id': 'mallory' },
    });
    expect(forged.status).toBe(200);
    expect(seenAt(h.seen, '/app/again')[0]?.headers).toMatchObject({
      'edgeward-auth-user-id': 'alice',
      'edgeward-auth-user-email': 'alice@example.com',
    });
    // Without one, forged headers get a sign-in redirect and never reach the service.
    const anonymous = await h.curl(host, '/app/forged', [
      '-H',
      'edgeward-auth-user-email: mallory@example.com',
      '-H',
      `Accept: ${PAGE_ACCEPT}`,
    ]);
    expect(anonymous.status).toBe(302);
    expect(headerOf(anonymous, 'location')?.startsWith(`${idp.issuer}/`)).toBe(true);
    expect(seenAt(h.seen, '/app/forged')).toHaveLength(0);
  });

  it('saml: the edge serves the SP metadata the API describes, and fails closed on the route (501)', async () => {
    const host = 'saml.modules.test';
    const idpMetadata = `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example.com/saml"><md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"/></md:EntityDescriptor>`;
    const { routes } = await h.httpsEdge(host, [
      { match_type: 'path_prefix', match: '/', modules: { saml: { idp_metadata: idpMetadata } } },
    ]);
    const route = routes[0] as { id: string; saml: Record<string, string> };
    const metadataPath = `/saml/${route.id}/metadata`;
    expect(new URL(route.saml.metadata_url ?? '').pathname).toBe(metadataPath);

    const metadata = await eventually(
      () => h.curl(host, metadataPath),
      (r) => r.status === 200,
    );
    expect(metadata.status).toBe(200);
    expect(headerOf(metadata, 'content-type')).toMatch(/^application\/samlmetadata\+xml/);
    expect(metadata.body).toMatch(/<md:EntityDescriptor /);
    const entityId = /entityID="([^"]+)"/.exec(metadata.body)?.[1] ?? '';
    expect(new URL(entityId).pathname).toBe(new URL(route.saml.entity_id ?? '').pathname);
    expect(new URL(entityId).host).toBe(`${host}:${h.edge.edge.tlsPort}`);
    const published = /<ds:X509Certificate>([^<]+)<\/ds:X509Certificate>/.exec(metadata.body)?.[1] ?? '';
    const certificate = new X509Certificate(Buffer.from(published, 'base64'));
    expect(certificate.fingerprint256).toBe(
      new X509Certificate(route.saml.request_signing_certificate_pem ?? '').fingerprint256,
    );
    expect(metadata.body).toContain(`Location="https://${host}:${h.edge.edge.tlsPort}/saml/${route.id}/acs"`);

    const page = await h.curl(host, '/private', ['-H', `Accept: ${PAGE_ACCEPT}`]);
    expect(page.status).toBe(501);
    expect(headerOf(page, 'edgeward-error')).toBe('saml-not-built');
    const acs = await h.curl(host, `/saml/${route.id}/acs`, ['-X', 'POST', '--data', 'SAMLResponse=x']);
    expect(acs.status).toBe(501);
    expect(h.seen).toHaveLength(0);
  });
});
