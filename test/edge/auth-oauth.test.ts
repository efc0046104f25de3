import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type AuthLogEvent,
  createOAuthModule,
  OAUTH_PROVIDERS,
} from '../../src/edge/https/modules/auth/index.js';
import { oauthModuleInput } from '../../src/schemas/route-modules.js';
import { Browser, browse, startTestEdge, type TestEdge } from '../support/auth-browser.js';
import { type FakeGithub, startFakeGithub } from '../support/auth-fake-github.js';
import { type LoopbackTls, loopbackTls, startTestIdp, type TestIdp } from '../support/auth-idp.js';

const ROUTE = 'rt_oauth';
const ACCOUNTS = {
  alice: { email: 'alice@example.com', email_verified: true, name: 'Alice Example' },
  bob: { email: 'bob@other.test', email_verified: true, name: 'Bob Other' },
  carol: { email: 'carol@example.com', email_verified: false, name: 'Carol Unverified' },
};

let tls: LoopbackTls;
let idp: TestIdp;
let edge: TestEdge;
let github: FakeGithub;
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
  github = await startFakeGithub(tls, idp, {
    alice: {
      id: 1001,
      login: 'alice-gh',
      name: 'Alice Example',
      emails: [
        { email: 'alice@old.test', primary: false, verified: true },
        { email: 'alice@example.com', primary: true, verified: true },
      ],
      orgs: ['other-org', 'third-org', 'acme'],
      teams: ['acme/platform'],
    },
    bob: {
      id: 1002,
      login: 'bob-gh',
      name: null,
      emails: [{ email: 'bob@example.com', primary: true, verified: false }],
      orgs: ['other-org'],
      teams: ['acme/sales'],
    },
  });
});

afterAll(async () => {
  await github?.close();
  await edge?.close();
  await idp?.close();
});

const browsers: Browser[] = [];
afterEach(async () => {
  await Promise.all(browsers.splice(0).map((open) => open.close()));
});

type ProviderRules = { email_addresses?: string[]; email_domains?: string[] };

/** `google` pointed at the test IdP, whose userinfo is OpenID-shaped as Google's is. */
function useGoogle(rules: ProviderRules = {}, credentials = true): void {
  use({
    google: {
      ...(credentials ? { client_id: idp.clientId, client_secret: idp.clientSecret } : {}),
      ...rules,
    },
  });
}

/** `github` signing in at the test IdP, with the fake GitHub API for the user. */
function useGithub(
  rules: ProviderRules & { organizations?: string[]; teams?: string[] } = {},
  session: { auth_check_interval?: number } = {},
): void {
  use(
    { github: { client_id: idp.clientId, client_secret: idp.clientSecret, ...rules } },
    session,
    github.userUrl,
  );
}

function use(
  provider: Record<string, unknown>,
  session: Record<string, unknown> = {},
  userUrl?: string,
): void {
  const config = oauthModuleInput.parse({ provider, ...session });
  const endpoints = {
    authorizationUrl: idp.endpoints.authorization,
    tokenUrl: idp.endpoints.token,
    userinfoUrl: userUrl ?? idp.endpoints.userinfo,
  };
  logs = [];
  clock = Date.now();
  edge.module = createOAuthModule(config, {
    routeId: ROUTE,
    cookieKey,
    ca: [tls.cert],
    now: () => clock,
    oauthEndpoints: { google: endpoints, github: endpoints },
    log: (event) => logs.push(event),
  });
  browser = new Browser(tls.cert);
  browsers.push(browser);
}

const page = (path = '/app') => `${edge.origin}${path}`;
const identityOf = (body: string) => (JSON.parse(body) as { identity: unknown }).identity;

async function signIn(login: string) {
  return browse(browser, page(), { login, idp: idp.issuer });
}

async function expectDenied(login: string) {
  const { response } = await signIn(login);
  expect(response.status, login).toBe(403);
  expect(response.body).toContain('Access denied');
  expect(response.body).not.toContain(idp.clientSecret);
  expect(browser.cookie(edge.origin, 'edgeward.session'), 'no session').toBeUndefined();
  expect(logs.find((event) => event.message === 'access denied')).toBeDefined();
}

describe('oauth module: a provider pointed at a real OpenID provider', () => {
  it('signs in with the provider and passes whoever it signs in when no rules are set', async () => {
    useGoogle();
    const { response, visited } = await signIn('bob');
    expect(response.status).toBe(200);
    expect(identityOf(response.body)).toEqual({ subject: 'bob', email: 'bob@other.test', name: 'Bob Other' });
    const authorize = new URL(visited[1] as string);
    expect(authorize.searchParams.get('scope')).toBe('openid email profile');
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('nonce'), 'OAuth sends no nonce').toBeNull();
  });

  it('enforces email_addresses', async () => {
    useGoogle({ email_addresses: ['Alice@Example.com'] });
    expect((await signIn('alice')).response.status).toBe(200);
    useGoogle({ email_addresses: ['Alice@Example.com'] });
    await expectDenied('bob');
  });

  it('enforces email_domains, exactly and only for verified addresses', async () => {
    useGoogle({ email_domains: ['EXAMPLE.com'] });
    expect((await signIn('alice')).response.status).toBe(200);
    useGoogle({ email_domains: ['example.com'] });
    await expectDenied('bob');
    useGoogle({ email_domains: ['example.com'] });
    await expectDenied('carol');
    useGoogle({ email_domains: ['ample.com', 'mail.example.com'] });
    await expectDenied('alice');
  });

  it('ends sessions when the rules change', async () => {
    useGoogle({ email_domains: ['example.com'] });
    await signIn('alice');
    const cookie = browser.cookie(edge.origin, 'edgeward.session') as string;
    useGoogle({ email_domains: ['other.test'] });
    browser.setCookie(edge.origin, 'edgeward.session', cookie);
    expect((await browser.fetch(page())).status).toBe(302);
  });

  it('explains that there is no managed app when client_id is not set, without starting a flow', async () => {
    useGoogle({}, false);
    const response = await browser.fetch(page());
    expect(response.status).toBe(503);
    expect(response.body).toContain('Sign-in is not configured');
    expect(logs[0]?.message).toContain('no client_id');
  });
});

describe('oauth module: github, through its user, emails, orgs and teams API', () => {
  it('takes the verified primary email from /user/emails and the name from /user', async () => {
    useGithub();
    const { response } = await signIn('alice');
    expect(response.status).toBe(200);
    expect(identityOf(response.body)).toEqual({
      subject: '1001',
      email: 'alice@example.com',
      name: 'Alice Example',
    });
    useGithub();
    const bob = await signIn('bob');
    expect(
      identityOf(bob.response.body),
      'an unverified primary is no email; login stands in for name',
    ).toEqual({
      subject: '1002',
      name: 'bob-gh',
    });
  });

  it('asks for read:org and lets members of a listed organization in (lists are paged)', async () => {
    useGithub({ organizations: ['ACME'] });
    const { response, visited } = await signIn('alice');
    expect(response.status).toBe(200);
    expect(new URL(visited[1] as string).searchParams.get('scope')).toBe('read:user user:email read:org');
    expect(github.requests.filter((line) => line === 'GET /user/orgs').length).toBeGreaterThanOrEqual(3);
    useGithub({ organizations: ['acme'] });
    await expectDenied('bob');
  });

  it('lets members of a listed team in', async () => {
    useGithub({ teams: ['acme/platform'] });
    expect((await signIn('alice')).response.status).toBe(200);
    useGithub({ teams: ['acme/platform'] });
    await expectDenied('bob');
  });

  it('lets a listed email in without any membership', async () => {
    useGithub({ organizations: ['acme'], email_addresses: ['alice@example.com'] });
    expect((await signIn('alice')).response.status).toBe(200);
    useGithub({ email_domains: ['example.com'] });
    await expectDenied('bob');
  });

  it('checks memberships again after auth_check_interval and starts over once they are gone', async () => {
    useGithub({ organizations: ['acme'] }, { auth_check_interval: 600 });
    await signIn('alice');
    const alice = github.users.alice!;
    const before = github.requests.length;

    clock += 601_000;
    const checked = await browser.fetch(page());
    expect(checked.status).toBe(200);
    expect(checked.headers['set-cookie'], 'the checked session is stored').toBeDefined();
    expect(github.requests.slice(before)).toContain('GET /user/orgs');

    alice.orgs = ['other-org'];
    try {
      clock += 601_000;
      const refused = await browser.fetch(page());
      expect(refused.status).toBe(302);
      expect(refused.headers.location).toContain(idp.endpoints.authorization);
      expect(logs.map((event) => event.message)).toContain('access denied on the periodic check');
    } finally {
      alice.orgs = ['other-org', 'third-org', 'acme'];
    }
  });
});

describe('oauth providers table', () => {
  it('names https endpoints for every provider', () => {
    for (const [name, spec] of Object.entries(OAUTH_PROVIDERS)) {
      for (const url of Object.values(spec.endpoints)) expect(new URL(url).protocol, name).toBe('https:');
      expect(spec.scopes.length, name).toBeGreaterThan(0);
    }
  });
});
