import { z } from 'zod';

/**
 * The sealed session cookie's content. Short keys: the whole cookie must stay under the 4 KB
 * browsers keep, and a refresh token can take much of it.
 */
export const sessionPayload = z.object({
  v: z.literal(1),
  /** The identity provider's subject (OIDC `sub`, an OAuth provider's user id). */
  sub: z.string().min(1),
  email: z.string().optional(),
  name: z.string().optional(),
  /** Seconds since the epoch: sign-in, last recorded activity, last confirmation by the IdP. */
  iat: z.number().int(),
  seen: z.number().int(),
  chk: z.number().int(),
  /** Refresh token, when the IdP gave one; otherwise the access token, to ask the IdP again later. */
  rt: z.string().optional(),
  at: z.string().optional(),
});
export type Session = z.infer<typeof sessionPayload>;

/** Seconds; 0 switches a limit off. */
export interface SessionLimits {
  inactivityTimeout: number;
  maximumDuration: number;
  checkInterval: number;
}

export type SessionState = 'expired' | 'recheck' | 'valid';

export function sessionState(session: Session, now: number, limits: SessionLimits): SessionState {
  if (limits.maximumDuration > 0 && now >= session.iat + limits.maximumDuration) return 'expired';
  if (limits.inactivityTimeout > 0 && now >= session.seen + limits.inactivityTimeout) return 'expired';
  if (limits.checkInterval > 0 && now >= session.chk + limits.checkInterval) return 'recheck';
  return 'valid';
}

/**
 * Whether to re-issue the cookie to record activity: at most once a minute (each re-issue is a
 * Set-Cookie on the upstream's response), more often only when the timeout itself is that short.
 */
export function needsTouch(session: Session, now: number, limits: SessionLimits): boolean {
  if (limits.inactivityTimeout === 0) return false;
  const interval = Math.max(1, Math.min(60, Math.floor(limits.inactivityTimeout / 2)));
  return now - session.seen >= interval;
}

/** The cookie's Max-Age: the browser drops it when the session would expire anyway. */
export function sessionMaxAge(session: Session, now: number, limits: SessionLimits): number | undefined {
  const ends: number[] = [];
  if (limits.maximumDuration > 0) ends.push(session.iat + limits.maximumDuration - now);
  if (limits.inactivityTimeout > 0) ends.push(session.seen + limits.inactivityTimeout - now);
  return ends.length === 0 ? undefined : Math.max(0, Math.min(...ends));
}
