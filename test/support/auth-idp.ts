import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { OpensslWorkspace } from './openssl.js';

/**
 * A real OpenID provider (panva's certified `oidc-provider`) on a loopback HTTPS port, with its
 * development login and consent forms, one confidential client and a few accounts. It is the
 * identity provider of the auth module tests: OIDC directly, and the OAuth providers through
 * endpoint overrides.
 */

export interface TestAccount {
  email?: string;
  email_verified?: boolean;
  name?: string;
}

/** One certificate for the IdP (127.0.0.1) and the test edge (localhost); trusted by pinning it. */
export interface LoopbackTls {
  cert: string;
  key: string;
}

export function loopbackTls(): LoopbackTls {
  const workspace = new OpensslWorkspace();
  try {
    const key = workspace.key('ec');
    const cert = workspace.certificate({
      subject: '/CN=localhost',
      key,
      extensions: ['basicConstraints = CA:FALSE', 'subjectAltName = DNS:localhost, IP:127.0.0.1'],
    });
    return { cert: cert.pem, key: key.pem };
  } finally {
    workspace.cleanup();
  }
}

export interface TestIdp {
  issuer: string;
  clientId: string;
  clientSecret: string;
  endpoints: { authorization: string; token: string; userinfo: string; introspection: string };
  /** Requests the IdP has served, for "no IdP involved" checks. */
  requests: string[];
  close(): Promise<void>;
}

interface ProviderInstance {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
}
type ProviderClass = new (issuer: string, configuration: Record<string, unknown>) => ProviderInstance;

export async function listen(server: Server, host?: string): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as AddressInfo).port;
}

export function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

export async function startTestIdp(options: {
  tls: LoopbackTls;
  redirectUris: string[];
  accounts: Record<string, TestAccount>;
}): Promise<TestIdp> {
  // oidc-provider ships no type declarations; a computed specifier keeps tsc from asking for them.
  const specifier = 'oidc-provider';
  const { default: Provider } = (await import(specifier)) as { default: ProviderClass };

  const requests: string[] = [];
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
  const server = createServer({ cert: options.tls.cert, key: options.tls.key }, (req, res) => {
    requests.push(`${req.method} ${req.url}`);
    handler(req, res);
  });
  const port = await listen(server, '127.0.0.1');
  const issuer = `https://127.0.0.1:${port}`;
  const clientId = 'edge-test-client';
  const clientSecret = 'test-client-secret-5f1c9d0e7b2a4c38a6e1';

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: options.redirectUris,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    async findAccount(_ctx: unknown, id: string) {
      const account = options.accounts[id];
      if (!account) return undefined;
      return { accountId: id, claims: async () => ({ sub: id, ...account }) };
    },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    // The OAuth providers' scope names, so requests for them are not refused.
    scopes: ['openid', 'offline_access', 'email', 'profile', 'read:user', 'user:email', 'read:org'],
    features: { devInteractions: { enabled: true }, introspection: { enabled: true } },
    // Every code grant gets a refresh token, so the periodic check can use it.
    issueRefreshToken: async () => true,
    cookies: { keys: ['edgeward-test-idp-cookie-key'] },
    pkce: { required: () => true },
    // Explicit lifetimes (seconds), which also keeps the provider from printing notices about them.
    ttl: {
      AccessToken: 3600,
      AuthorizationCode: 60,
      Grant: 86_400,
      IdToken: 3600,
      Interaction: 600,
      RefreshToken: 86_400,
      Session: 86_400,
    },
  });
  handler = provider.callback();

  return {
    issuer,
    clientId,
    clientSecret,
    endpoints: {
      authorization: `${issuer}/auth`,
      token: `${issuer}/token`,
      userinfo: `${issuer}/me`,
      introspection: `${issuer}/token/introspection`,
    },
    requests,
    close: () => closeServer(server),
  };
}
