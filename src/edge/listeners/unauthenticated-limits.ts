/**
 * What a connection to an agent endpoint (the tunnel endpoint, the SSH endpoint) may take before it
 * has authenticated. Anyone can open such a connection, so without these a client that connects
 * and sends nothing holds a file descriptor of the edge for ever.
 */
export interface UnauthenticatedLimits {
  /**
   * How long a connection may take, from accept, to finish its TLS handshake (tunnel) or SSH key
   * exchange (ms); the tunnel endpoint gives an agent as long again to say hello after it.
   */
  handshakeTimeoutMs?: number | undefined;
  /** How long an SSH client may take to authenticate, from accept (ms). */
  sshAuthTimeoutMs?: number | undefined;
  /**
   * How many connections one source address may hold at once on one endpoint before they have
   * authenticated; one more is closed at once. Sessions do not count.
   */
  maxPerSource?: number | undefined;
}

export const UNAUTHENTICATED_DEFAULTS = {
  handshakeTimeoutMs: 10_000,
  sshAuthTimeoutMs: 30_000,
  maxPerSource: 16,
} as const satisfies Required<UnauthenticatedLimits>;

/**
 * Why an endpoint closed (or saw close) a connection that never authenticated: a short, bounded set,
 * fit for a metric label. A client that authenticated and was refused is a `refused` instead.
 */
export type DropKind =
  /** its source address already held the most connections allowed */
  | 'per_source_limit'
  /** the TLS handshake or SSH key exchange did not finish in time */
  | 'handshake_timeout'
  /** the TLS handshake or the protocol after it failed (not TLS, wrong ALPN, no readable hello) */
  | 'handshake_failed'
  /** the handshake finished, but the client did not authenticate in time */
  | 'auth_timeout'
  /** the client went away before authenticating */
  | 'closed';
