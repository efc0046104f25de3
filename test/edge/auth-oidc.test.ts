import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type AuthLogEvent,
  type AuthModuleOptions,
  createOidcModule,
} from '../../src/edge/https/modules/auth/index.js';
import { type OidcModuleInput, oidcModuleInput } from '../../src/schemas/route-modules.js';
import { Browser, browse, startTestEdge, type TestEdge } from '../support/auth-browser.js';
import { type LoopbackTls, loopbackTls, startTestIdp, type TestIdp } from '../support/auth-idp.js';

const ROUTE = 'rt_oidc';
const ACCOUNTS = {
  alice: { email: 'alice@example.com', email_verified: true, name: 'Alice Example' },
  bob: { email: 'bob@other.test', email_verified: true, name: 'Bob Other' },
};

let tls: LoopbackTls;
let idp: TestIdp;
let edge: TestEdge;
let browser: Browser;
let logs: AuthLogEvent[];
let clock: number;
const cookieKey = randomBytes(32);

beforeAll(async () => {
  tls = loopbackTls();
  edge = await startTestEdge(tls);
  idp = await startTestIdp({
    tls,
    redirectUris: [`${edge.origin}/_edgeward/auth/${ROUTE}/callback`],
    accounts: ACCOUNTS,
  });
});

afterAll(async () => {
  await edge?.close();
  await idp?.close();
});

const browsers: Browser[] = [];
afterEach(async () => {
  await Promise.all(browsers.splice(0).map((open) => open.close()));
});

function useOidc(input: Partial<OidcModuleInput> = {}, options: Partial<AuthModuleOptions> = {}): void {
  const config = oidcModuleInput.parse({
    issuer: idp.issuer,
    client_id: idp.clientId,
    client_secret: idp.clientSecret,
    ...input,
  });
  logs = [];
  clock = Date.now();
  edge.module = createOidcModule(config, {
    routeId: ROUTE,
    cookieKey,
    ca: [tls.cert],
    now: () => clock,
    log: (event) => logs.push(event),
    ...options,
  });
  browser = new Browser(tls.cert);
  browsers.push(browser);
}

const page = (path = '/app/page?x=1') => `${edge.origin}${path}`;
const json = (body: string) => JSON.parse(body) as { upstream: boolean; identity: unknown };
const setCookies = (headers: Record<string, string | string[] | undefined>) => {
  const value = headers['set-cookie'];
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
};

async function signIn(login = 'alice', url = page()) {
  const { response, visited } = await browse(browser, url, { login, idp: idp.issuer });
  return { response, visited };
}

describe('oidc module: the authorization-code flow against a real OpenID provider', () => {
  it('signs in through the login and consent forms and returns to the original URL', async () => {
    useOidc();
    const { response, visited } = await signIn();
    expect(response.status).toBe(200);
    expect(json(response.body)).toEqual({
      upstream: true,
      identity: { subject: 'alice', email: 'alice@example.com', name: 'Alice Example' },
    });
    expect(response.url).toBe(page());

    // The first hop went to the IdP with PKCE S256, a nonce and the route's callback.
    const authorize = new URL(visited[1] as string);
    expect(authorize.origin + authorize.pathname).toBe(idp.endpoints.authorization);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('nonce')).toBeTruthy();
    expect(authorize.searchParams.get('state')).toBeTruthy();
    expect(authorize.searchParams.get('scope')).toBe('openid email profile');
    expect(authorize.searchParams.get('redirect_uri')).toBe(
      `${edge.origin}/_edgeward/auth/${ROUTE}/callback`,
    );
    expect(visited.some((url) => url.startsWith(`${edge.origin}/_edgeward/auth/${ROUTE}/callback?`))).toBe(
      true,
    );
    expect(browser.cookie(edge.origin, 'edgeward.session')).toBeTruthy();
    expect(
      browser.cookie(edge.origin, `edgeward.auth_${ROUTE}`),
      'the flow cookie is cleared',
    ).toBeUndefined();
    expect(logs.map((event) => event.message)).toContain('signed in');
  });

  it('lets the session cookie in on later requests without asking the IdP', async () => {
    useOidc();
    const { response } = await signIn();
    const setCookie = (await browser.fetch(page())).headers['set-cookie'];
    expect(setCookie, 'nothing to refresh within the minute').toBeUndefined();
    const before = idp.requests.length;
    const again = await browser.fetch(page('/other'), { accept: 'application/json' });
    expect(again.status).toBe(200);
    expect(json(again.body).identity).toEqual(json(response.body).identity);
    expect(idp.requests.length, 'the IdP was not asked').toBe(before);
  });

  it('sets the session cookie HttpOnly, Secure, SameSite=Lax on / with the session limits as Max-Age', async () => {
    useOidc({ inactivity_timeout: 600, maximum_duration: 3600 });
    const { response } = await browse(browser, page(), {
      login: 'alice',
      idp: idp.issuer,
      stopAt: (url) => url.pathname.endsWith('/callback'),
    });
    const callback = await browser.fetch(new URL(response.headers.location as string, response.url).href);
    expect(callback.status).toBe(302);
    expect(callback.headers.location).toBe(page());
    expect(callback.headers['cache-control']).toBe('no-store');
    expect(setCookies(callback.headers)).toEqual([
      `edgeward.auth_${ROUTE}=; Path=/_edgeward/auth/${ROUTE}/; Max-Age=0; HttpOnly; Secure; SameSite=Lax`,
      expect.stringMatching(
        /^edgeward\.session=[^;]+; Path=\/; Max-Age=600; HttpOnly; Secure; SameSite=Lax$/,
      ),
    ]);
  });

  it('starts over when the cookie was tampered with, and clears it', async () => {
    useOidc();
    await signIn();
    const sealed = browser.cookie(edge.origin, 'edgeward.session') as string;
    // The first character of the ciphertext (`v1.<iv>.<tag>.<ciphertext>`): all its bits count.
    const at = sealed.lastIndexOf('.') + 1;
    const flipped = `${sealed.slice(0, at)}${sealed[at] === 'A' ? 'B' : 'A'}${sealed.slice(at + 1)}`;
    browser.setCookie(edge.origin, 'edgeward.session', flipped);
    const response = await browser.fetch(page());
    expectSignInRedirect(response);
    expect(setCookies(response.headers)).toContainEqual(
      expect.stringMatching(/^edgeward\.session=; Path=\/; Max-Age=0/),
    );
  });

  it("does not accept another route's session cookie", async () => {
    useOidc();
    await signIn();
    edge.module = createOidcModule(
      oidcModuleInput.parse({ issuer: idp.issuer, client_id: idp.clientId, client_secret: idp.clientSecret }),
      { routeId: 'rt_other', cookieKey, ca: [tls.cert] },
    );
    expectSignInRedirect(await browser.fetch(page()), 'rt_other');
  });

  it('answers 401 rather than a redirect to requests that cannot follow one', async () => {
    useOidc();
    for (const [method, accept] of [
      ['GET', '*/*'],
      ['GET', 'application/json'],
      ['POST', 'text/html'],
      ['DELETE', 'text/html'],
    ] as const) {
      const response = await browser.fetch(page(), { method, accept });
      expect(response.status, `${method} ${accept}`).toBe(401);
      expect(response.headers.location).toBeUndefined();
    }
    expectSignInRedirect(await browser.fetch(page(), { method: 'HEAD' }));
  });

  it('passes OPTIONS without authentication only with options_passthrough', async () => {
    useOidc({ options_passthrough: true });
    const passed = await browser.fetch(page(), { method: 'OPTIONS', accept: '*/*' });
    expect(passed.status).toBe(200);
    expect(json(passed.body)).toEqual({ upstream: true, identity: null });

    useOidc({ options_passthrough: false });
    expect((await browser.fetch(page(), { method: 'OPTIONS', accept: '*/*' })).status).toBe(401);
  });

  it('refuses a callback whose state does not match the sign-in in progress (400)', async () => {
    useOidc();
    const start = await browser.fetch(page());
    expectSignInRedirect(start);
    const callback = `${edge.origin}/_edgeward/auth/${ROUTE}/callback`;
    const forged = await browser.fetch(`${callback}?code=abc&state=not-the-state`);
    expect(forged.status).toBe(400);
    expect(forged.body).toContain('Sign-in could not be completed');
    expect(browser.cookie(edge.origin, `edgeward.auth_${ROUTE}`), 'the real flow survives').toBeTruthy();

    const fresh = new Browser(tls.cert);
    try {
      const state = new URL(start.headers.location as string).searchParams.get('state') as string;
      const noCookie = await fresh.fetch(`${callback}?code=abc&state=${state}`);
      expect(noCookie.status, 'a state without its flow cookie').toBe(400);
    } finally {
      await fresh.close();
    }
  });

  it('refuses to use a callback twice', async () => {
    useOidc();
    const { visited } = await signIn();
    const callback = visited.find((url) => url.includes('/callback?')) as string;
    expect((await browser.fetch(callback)).status).toBe(400);
  });

  it('shows an error page without the secret when the IdP refuses the client credentials', async () => {
    useOidc({ client_secret: 'wrong-secret-9d2f7a61c4e8' });
    const { response } = await signIn();
    expect(response.status).toBe(502);
    expect(response.headers['content-type']).toContain('text/html');
    expect(response.body).toContain('Sign-in failed');
    for (const secret of ['wrong-secret-9d2f7a61c4e8', idp.clientSecret]) {
      expect(response.body).not.toContain(secret);
      expect(JSON.stringify(logs)).not.toContain(secret);
    }
    const failure = logs.find((event) => event.message === 'sign-in failed at the identity provider');
    expect(failure?.detail).toMatchObject({ error: 'invalid_client', status: 401 });
    expect(browser.cookie(edge.origin, 'edgeward.session')).toBeUndefined();
  });

  it('answers 403 when the user cancels at the IdP', async () => {
    useOidc();
    const { response } = await browse(browser, page(), { login: 'alice', idp: idp.issuer, cancel: true });
    expect(response.status).toBe(403);
    expect(response.body).toContain('Sign-in refused');
    expect(logs.find((event) => event.message.includes('refused'))?.detail).toEqual({
      error: 'access_denied',
    });
  });

  it('ends a session after inactivity_timeout, counting from the last recorded activity', async () => {
    useOidc({ inactivity_timeout: 300, maximum_duration: 100_000 });
    await signIn();
    const start = clock;

    clock = start + 200_000;
    const touched = await browser.fetch(page());
    expect(touched.status).toBe(200);
    expect(setCookies(touched.headers), 'activity is recorded').toHaveLength(1);
    expect(setCookies(touched.headers)[0]).toMatch(
      /^edgeward\.session=.+; Path=\/; Max-Age=300; HttpOnly; Secure; SameSite=Lax$/,
    );

    clock = start + 450_000; // 450 s after sign-in, 250 s after the last activity
    expect((await browser.fetch(page())).status).toBe(200);

    clock = start + 450_000 + 301_000;
    expectSignInRedirect(await browser.fetch(page()));
  });

  it('ends a session after maximum_duration however active it is', async () => {
    useOidc({ inactivity_timeout: 300, maximum_duration: 1000 });
    await signIn();
    const start = clock;
    for (const seconds of [250, 500, 750, 999]) {
      clock = start + seconds * 1000;
      const response = await browser.fetch(page());
      expect(response.status, `${seconds} s`).toBe(200);
      expect(setCookies(response.headers)[0]).toContain(`Max-Age=${Math.min(300, 1000 - seconds)};`);
    }
    clock = start + 1000_000;
    expectSignInRedirect(await browser.fetch(page()));
    const { response } = await signIn();
    expect(response.status, 'signing in again works').toBe(200);
  });

  it('checks the session with the IdP hourly through the refresh token', async () => {
    useOidc();
    await signIn();
    const before = idp.requests.length;
    clock += 3601_000;
    const response = await browser.fetch(page());
    expect(response.status).toBe(200);
    expect(json(response.body).identity).toMatchObject({ subject: 'alice', email: 'alice@example.com' });
    expect(idp.requests.slice(before)).toEqual(expect.arrayContaining(['POST /token', 'GET /me']));
    expect(setCookies(response.headers), 'the checked session is stored').toHaveLength(1);

    const after = idp.requests.length;
    clock += 60_000;
    expect((await browser.fetch(page())).status).toBe(200);
    expect(idp.requests.length, 'not again within the hour').toBe(after);
  });

  it('shares one check with the IdP among parallel requests of a session', async () => {
    useOidc();
    await signIn();
    const before = idp.requests.length;
    clock += 3601_000;
    const responses = await Promise.all([1, 2, 3, 4].map((n) => browser.fetch(page(`/asset/${n}`))));
    expect(responses.map((response) => response.status)).toEqual([200, 200, 200, 200]);
    expect(idp.requests.slice(before).filter((line) => line === 'POST /token')).toHaveLength(1);
  });

  it('signs out at the logout path', async () => {
    useOidc();
    await signIn();
    const out = await browser.fetch(`${edge.origin}/_edgeward/auth/${ROUTE}/logout`);
    expect(out.status).toBe(200);
    expect(out.body).toContain('Signed out');
    expect(browser.cookie(edge.origin, 'edgeward.session')).toBeUndefined();
    expectSignInRedirect(await browser.fetch(page()));
  });

  it('serves only callback and logout under its path', async () => {
    useOidc();
    const base = `${edge.origin}/_edgeward/auth/${ROUTE}`;
    expect((await browser.fetch(`${base}/other`)).status).toBe(404);
    const post = await browser.fetch(`${base}/callback`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET');
    expect((await browser.fetch(`${base}/logout`, { method: 'PUT' })).status).toBe(405);
  });

  it('uses the cookie prefix for both cookies', async () => {
    useOidc({ cookie_prefix: 'acme-' });
    const start = await browser.fetch(page());
    expect(setCookies(start.headers)[0]).toMatch(
      new RegExp(
        `^acme-auth_${ROUTE}=.+; Path=/_edgeward/auth/${ROUTE}/; Max-Age=600; HttpOnly; Secure; SameSite=Lax$`,
      ),
    );
    await signIn();
    expect(browser.cookie(edge.origin, 'acme-session')).toBeTruthy();
  });
});

function expectSignInRedirect(response: { status: number; headers: Record<string, unknown> }, route = ROUTE) {
  expect(response.status).toBe(302);
  const location = new URL(response.headers.location as string);
  expect(location.origin + location.pathname).toBe(idp.endpoints.authorization);
  expect(location.searchParams.get('redirect_uri')).toBe(`${edge.origin}/_edgeward/auth/${route}/callback`);
}
