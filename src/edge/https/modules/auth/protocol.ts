import type { Configuration, IDToken } from 'openid-client';
import type { AuthIdentity } from './types.js';

/** What the IdP handed over for one user: at sign-in, or when the session is checked again. */
export interface GrantedTokens {
  accessToken?: string;
  /** The validated ID token's claims (OIDC sign-in; a refresh may return one too). */
  idClaims?: IDToken;
  /** True when a refresh token grant just succeeded: the IdP still honours the user's grant. */
  refreshed: boolean;
}

export type Identification = { ok: true; identity: AuthIdentity } | { ok: false; reason: string };

/**
 * The part of the authorization-code flow that differs between OIDC and the OAuth providers; the
 * flow itself, the cookies and the session rules are shared (`auth-module.ts`).
 */
export interface IdentityProtocol {
  /** Names the IdP, the client and the access rules: part of every sealed cookie's context. */
  readonly binding: string;
  /** OIDC: send a nonce and require a valid ID token. */
  readonly idToken: boolean;
  readonly scope: string;
  /** Why this route cannot sign anyone in (configuration the edge cannot act on), if so. */
  readonly unusable?: string;
  configuration(): Promise<Configuration>;
  /** The callback URL as openid-client should read it. */
  authorizationResponse(callback: URL): URL;
  /**
   * Who the tokens belong to and whether the route's rules let them in. `previous`: the session's
   * identity when checking again; the subject must not change.
   */
  identify(config: Configuration, tokens: GrantedTokens, previous?: AuthIdentity): Promise<Identification>;
}

/** Drops C0 controls and DEL (a header value must not carry CR, LF or NUL). */
const withoutControls = (text: string) =>
  [...text].filter((char) => char.charCodeAt(0) > 0x1f && char.charCodeAt(0) !== 0x7f).join('');

/** Identity values go into request headers: no control characters, nothing empty. */
export function cleanIdentity(identity: {
  subject: string;
  email?: string | null;
  name?: string | null;
}): AuthIdentity {
  const clean = (value: string | null | undefined) => {
    const text = value === null || value === undefined ? undefined : withoutControls(value).trim();
    return text ? text : undefined;
  };
  const subject = clean(identity.subject);
  if (!subject) throw new Error('the identity provider named no subject for the user');
  const result: AuthIdentity = { subject };
  const email = clean(identity.email);
  const name = clean(identity.name);
  if (email) result.email = email;
  if (name) result.name = name;
  return result;
}

/** Wrong subject on a second look: a different user's tokens, never to be accepted. */
export function sameSubject(previous: AuthIdentity | undefined, subject: string): void {
  if (previous && previous.subject !== subject) {
    throw new Error('the identity provider answered for a different subject than the session');
  }
}
