import type { OAuthProviderName } from '../../../../schemas/route-modules.js';

/** A request as the HTTPS edge sees it, before routing to the upstream. */
export interface AuthRequest {
  method: string;
  /** The full public URL: `https://host[:port]/path?query`. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
}

/** Who signed in, as the upstream is told (`edgeward-auth-user-*` headers, set by the caller). */
export interface AuthIdentity {
  subject: string;
  email?: string;
  name?: string;
}

export type AuthVerdict =
  | {
      kind: 'continue';
      /** Absent when the request passed without authentication (`options_passthrough`). */
      identity?: AuthIdentity;
      /** Set-Cookie values to add to the upstream's response (e.g. a refreshed session). */
      setCookies: string[];
    }
  | { kind: 'respond'; status: number; headers: Record<string, string | string[]>; body: string };

export interface AuthModule {
  handle(request: AuthRequest): Promise<AuthVerdict>;
}

export type ProviderName = OAuthProviderName;

export interface OAuthEndpoints {
  authorizationUrl: string;
  tokenUrl: string;
  userinfoUrl: string;
}

export interface AuthLogEvent {
  level: 'info' | 'warn';
  message: string;
  routeId: string;
  detail?: Record<string, unknown>;
}

export interface AuthModuleOptions {
  routeId: string;
  /** 32 bytes: seals session cookies (AES-256-GCM); the same on every edge process. */
  cookieKey: Buffer;
  /** For calls to the identity provider: extra CA certificates (PEM) to trust, e.g. a test IdP's. */
  ca?: string[];
  /** Milliseconds since the epoch; `Date.now` unless a test moves the clock. */
  now?: () => number;
  /** OAuth only: override a provider's endpoints (tests, and self-hosted GitLab or GitHub). */
  oauthEndpoints?: Partial<Record<ProviderName, OAuthEndpoints>>;
  log?: (event: AuthLogEvent) => void;
}
