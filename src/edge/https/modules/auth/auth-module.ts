import {
  AuthorizationResponseError,
  authorizationCodeGrant,
  buildAuthorizationUrl,
  type Configuration,
  calculatePKCECodeChallenge,
  randomNonce,
  randomPKCECodeVerifier,
  randomState,
  refreshTokenGrant,
} from 'openid-client';
import { clearCookie, readCookies, setCookie } from './cookies.js';
import { describeIdpError, isRefusal } from './errors.js';
import { FLOW_LIFETIME_SECONDS, flowPayload, returnUrlFor } from './flow-state.js';
import type { IdentityProtocol } from './protocol.js';
import { methodNotAllowed, page, redirect, unauthorized } from './responses.js';
import { CookieSealer } from './sealed-cookie.js';
import {
  needsTouch,
  type Session,
  type SessionLimits,
  sessionMaxAge,
  sessionPayload,
  sessionState,
} from './session.js';
import type { AuthIdentity, AuthModule, AuthModuleOptions, AuthRequest, AuthVerdict } from './types.js';

/** The paths under which the edge routes every request to a route's auth module first. */
export const AUTH_PATH_PREFIX = '/_edgeward/auth/';

/** Milliseconds a check's outcome answers requests that carry the cookie it checked. */
const CHECK_REUSE_MS = 30_000;

/** Browsers keep cookies of up to 4096 bytes (name, value and attributes). */
const MAX_SESSION_COOKIE_VALUE = 3800;

export interface SessionSettings {
  cookiePrefix: string;
  optionsPassthrough: boolean;
  limits: SessionLimits;
}

/** A route id as a cookie-name fragment (route ids are already token characters; this is a guard). */
const cookieNamePart = (text: string) => text.replace(/[^A-Za-z0-9_-]/g, '_');

const header = (request: AuthRequest, name: string) => {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(', ') : (value ?? '');
};

/** The session's identity and the one token it keeps: the refresh token if any, else the access token. */
function sessionFields(identity: AuthIdentity, refreshToken?: string, accessToken?: string) {
  return {
    sub: identity.subject,
    ...(identity.email ? { email: identity.email } : {}),
    ...(identity.name ? { name: identity.name } : {}),
    ...(refreshToken ? { rt: refreshToken } : accessToken ? { at: accessToken } : {}),
  };
}

/**
 * Only a top-level page load can follow a redirect to a sign-in page and come back; API calls and
 * subresources (whose Accept does not name text/html, e.g. `*\/*` of fetch and curl) get 401.
 */
function canSignIn(request: AuthRequest): boolean {
  const method = request.method.toUpperCase();
  return (
    (method === 'GET' || method === 'HEAD') && header(request, 'accept').toLowerCase().includes('text/html')
  );
}

/**
 * The authorization-code flow at the edge, shared by the OIDC and OAuth modules: the redirect to
 * the IdP (state, nonce, PKCE S256, all kept in a sealed short-lived cookie), the callback, the
 * sealed session cookie and its timeouts, the periodic check with the IdP, and logout.
 */
export function createAuthModule(
  protocol: IdentityProtocol,
  settings: SessionSettings,
  options: AuthModuleOptions,
): AuthModule {
  const { routeId } = options;
  const clock = options.now ?? Date.now;
  const now = () => Math.floor(clock() / 1000);
  const log = (level: 'info' | 'warn', message: string, detail?: Record<string, unknown>) =>
    options.log?.({ level, message, routeId, ...(detail ? { detail } : {}) });
  const sealer = new CookieSealer(options.cookieKey);
  const { limits } = settings;

  const basePath = `${AUTH_PATH_PREFIX}${routeId}/`;
  const sessionCookie = `${settings.cookiePrefix}session`;
  const flowCookie = `${settings.cookiePrefix}auth_${cookieNamePart(routeId)}`;
  const sessionContext = `edgeward auth session\n${routeId}\n${protocol.binding}`;
  const flowContext = `edgeward auth flow\n${routeId}\n${protocol.binding}`;
  const clearSession = () => clearCookie(sessionCookie, '/');
  const clearFlow = () => clearCookie(flowCookie, basePath);

  const identityOf = (session: Session): AuthIdentity => ({
    subject: session.sub,
    ...(session.email ? { email: session.email } : {}),
    ...(session.name ? { name: session.name } : {}),
  });

  function issueSession(session: Session, at: number): string {
    let sealed = sealer.seal(session, sessionContext);
    if (sealed.length > MAX_SESSION_COOKIE_VALUE && (session.rt || session.at)) {
      // Too big for browsers to keep: drop the token; the next check then signs in again.
      log('warn', 'session token too large for the cookie; the session will not be checked with the IdP');
      const { rt: _rt, at: _at, ...rest } = session;
      sealed = sealer.seal(rest, sessionContext);
    }
    return setCookie(sessionCookie, sealed, { path: '/', maxAge: sessionMaxAge(session, at, limits) });
  }

  // One check with the IdP per session: parallel requests (a page's assets) share it, and so do
  // requests that still carry the old cookie for a while after, so a rotating refresh token is
  // used once.
  const checks = new Map<string, { result: Promise<Session | undefined>; startedAt: number }>();

  async function checkAgain(session: Session): Promise<Session | undefined> {
    try {
      const config = await protocol.configuration();
      let accessToken = session.at;
      let refreshToken = session.rt;
      let tokens: Awaited<ReturnType<typeof refreshTokenGrant>> | undefined;
      if (refreshToken) {
        tokens = await refreshTokenGrant(config, refreshToken);
        accessToken = tokens.access_token;
        refreshToken = tokens.refresh_token ?? refreshToken;
      }
      if (!accessToken && !tokens) {
        log('info', 'session has no token to check with the IdP; signing in again');
        return undefined;
      }
      const result = await protocol.identify(
        config,
        { accessToken, idClaims: tokens?.claims(), refreshed: tokens !== undefined },
        identityOf(session),
      );
      if (!result.ok) {
        log('info', 'access denied on the periodic check', { reason: result.reason });
        return undefined;
      }
      return {
        v: 1,
        iat: session.iat,
        seen: session.seen,
        chk: now(),
        ...sessionFields(result.identity, refreshToken, accessToken),
      };
    } catch (error) {
      // A refusal is routine (a revoked grant); no answer at all is worth an operator's look.
      const level = isRefusal(error) ? 'info' : 'warn';
      log(level, 'the IdP did not confirm the session; signing in again', describeIdpError(error));
      return undefined;
    }
  }

  function checkOnce(cookie: string, session: Session): Promise<Session | undefined> {
    const startedAt = Date.now();
    for (const [key, check] of checks) {
      if (startedAt - check.startedAt > CHECK_REUSE_MS) checks.delete(key);
    }
    const running = checks.get(cookie);
    if (running) return running.result;
    const result = checkAgain(session);
    checks.set(cookie, { result, startedAt });
    return result;
  }

  async function signIn(request: AuthRequest, url: URL, hadSession: boolean): Promise<AuthVerdict> {
    const cleared = hadSession ? [clearSession()] : [];
    if (!canSignIn(request)) return unauthorized(cleared);
    if (protocol.unusable) {
      log('warn', protocol.unusable);
      return page(503, 'Sign-in unavailable', 'Sign-in is not configured for this site yet.', cleared);
    }
    let config: Configuration;
    try {
      config = await protocol.configuration();
    } catch (error) {
      log('warn', 'the identity provider could not be reached', describeIdpError(error));
      return page(502, 'Sign-in unavailable', 'The identity provider could not be reached. Try again later.');
    }
    const state = randomState();
    const nonce = protocol.idToken ? randomNonce() : undefined;
    const verifier = randomPKCECodeVerifier();
    const parameters: Record<string, string> = {
      redirect_uri: `${url.origin}${basePath}callback`,
      scope: protocol.scope,
      state,
      code_challenge: await calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    };
    if (nonce) parameters.nonce = nonce;
    const flow = sealer.seal(
      { v: 1, state, nonce, verifier, ret: returnUrlFor(url), exp: now() + FLOW_LIFETIME_SECONDS },
      flowContext,
    );
    const flowSetCookie = setCookie(flowCookie, flow, { path: basePath, maxAge: FLOW_LIFETIME_SECONDS });
    return redirect(buildAuthorizationUrl(config, parameters).href, [...cleared, flowSetCookie]);
  }

  async function callback(request: AuthRequest, url: URL): Promise<AuthVerdict> {
    const flow = sealer.open(readCookies(request.headers.cookie).get(flowCookie), flowContext, flowPayload);
    const at = now();
    if (!flow || flow.exp <= at || url.searchParams.get('state') !== flow.state) {
      // The flow cookie stays: a forged callback must not break a sign-in in progress.
      log('info', 'callback without a matching sign-in in progress');
      return page(
        400,
        'Sign-in could not be completed',
        'This sign-in link is not valid any more. Go back to the page you wanted and try again.',
      );
    }
    try {
      const config = await protocol.configuration();
      const tokens = await authorizationCodeGrant(config, protocol.authorizationResponse(url), {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        ...(protocol.idToken ? { expectedNonce: flow.nonce, idTokenExpected: true } : {}),
      });
      const result = await protocol.identify(config, {
        accessToken: tokens.access_token,
        idClaims: tokens.claims(),
        refreshed: false,
      });
      if (!result.ok) {
        log('info', 'access denied', { reason: result.reason });
        return page(403, 'Access denied', 'You signed in, but this account may not access this site.', [
          clearFlow(),
        ]);
      }
      const session: Session = {
        v: 1,
        iat: at,
        seen: at,
        chk: at,
        ...sessionFields(result.identity, tokens.refresh_token, tokens.access_token),
      };
      log('info', 'signed in', { subject: session.sub });
      // The return URL came from our own sealed cookie; the origin check is a second lock.
      const back = new URL(flow.ret);
      const target = back.origin === url.origin ? back.href : `${url.origin}/`;
      return redirect(target, [clearFlow(), issueSession(session, at)]);
    } catch (error) {
      if (error instanceof AuthorizationResponseError) {
        log('info', 'the identity provider refused the sign-in', describeIdpError(error));
        return page(403, 'Sign-in refused', 'The identity provider did not sign you in.', [clearFlow()]);
      }
      log('warn', 'sign-in failed at the identity provider', describeIdpError(error));
      return page(
        502,
        'Sign-in failed',
        'The identity provider could not complete the sign-in. Try again; if it keeps failing, tell the site operator.',
        [clearFlow()],
      );
    }
  }

  function logout(): AuthVerdict {
    return page(200, 'Signed out', 'You have signed out of this site.', [clearSession(), clearFlow()]);
  }

  async function ownPath(request: AuthRequest, url: URL): Promise<AuthVerdict> {
    const action = url.pathname.slice(basePath.length);
    const method = request.method.toUpperCase();
    if (action === 'callback') {
      if (method !== 'GET') return methodNotAllowed('GET');
      return callback(request, url);
    }
    if (action === 'logout') {
      if (method !== 'GET' && method !== 'POST') return methodNotAllowed('GET, POST');
      return logout();
    }
    return page(404, 'Not found', 'There is nothing here.');
  }

  return {
    async handle(request) {
      let url: URL;
      try {
        url = new URL(request.url);
      } catch (error) {
        throw new Error('the auth module needs the absolute public URL of the request', { cause: error });
      }
      if (url.pathname.startsWith(basePath)) return ownPath(request, url);
      if (settings.optionsPassthrough && request.method.toUpperCase() === 'OPTIONS') {
        return { kind: 'continue', setCookies: [] };
      }

      const raw = readCookies(request.headers.cookie).get(sessionCookie);
      let session = sealer.open(raw, sessionContext, sessionPayload);
      if (!session) return signIn(request, url, raw !== undefined);
      const at = now();
      const state = sessionState(session, at, limits);
      if (state === 'expired') {
        log('info', 'session expired', { subject: session.sub });
        return signIn(request, url, true);
      }
      let changed = false;
      if (state === 'recheck') {
        session = await checkOnce(raw as string, session);
        if (!session) return signIn(request, url, true);
        changed = true;
      }
      if (needsTouch(session, at, limits)) {
        session = { ...session, seen: at };
        changed = true;
      }
      return {
        kind: 'continue',
        identity: identityOf(session),
        setCookies: changed ? [issueSession(session, at)] : [],
      };
    },
  };
}
