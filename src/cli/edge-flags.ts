import { hostname } from 'node:os';
import { DEFAULT_HTTPS_CLIENT_LIMITS, type HttpsClientLimits } from '../edge/https/client-limits.js';
import {
  UNAUTHENTICATED_DEFAULTS,
  type UnauthenticatedLimits,
} from '../edge/listeners/unauthenticated-limits.js';
import { type Flags, secondsFlag } from '../lib/flags.js';
import { LISTENER_OFF } from '../lib/listen-address.js';
import { SESSION_LIVENESS, type SessionLivenessSettings } from '../schemas/tunnel-protocol.js';

export function parsePortRange(text: string, flag: string): { min: number; max: number } {
  const match = /^(\d{1,5})-(\d{1,5})$/.exec(text);
  const min = Number(match?.[1]);
  const max = Number(match?.[2]);
  if (!match || min < 1 || max > 65535 || min > max)
    throw new Error(`${flag}: '${text}' is not a range like 20000-29999`);
  return { min, max };
}

/** `--tcp-port-range`: the server gives new reserved addresses ports in it, an edge serves those. */
export const TCP_PORT_RANGE_FLAG = {
  'tcp-port-range': {
    type: 'string',
    value: 'A-B',
    default: '10000-65535',
    help: 'ports of reserved addresses: the server gives new ones ports in it, edges serve those',
  },
} as const satisfies Flags;

export interface EdgeFlagDefaults {
  tunnelAddr: string;
  tlsAddr: string;
  sshAddr: string;
  tcpHost: string;
  metricsAddr: string;
  relayAddr: string;
}

/**
 * The data plane's flags, shared by `edgeward edge` (`prefix` "") and `edgeward server --edge`
 * (`prefix` "edge-"), each with its own defaults.
 */
export function edgeFlags(prefix: string, defaults: EdgeFlagDefaults): Flags {
  const off = `; ${LISTENER_OFF} disables`;
  return {
    [`${prefix}tunnel-addr`]: {
      type: 'string',
      value: 'ADDR',
      default: defaults.tunnelAddr,
      help: 'where agents connect (TLS)',
    },
    [`${prefix}tls-addr`]: {
      type: 'string',
      value: 'ADDR',
      default: defaults.tlsAddr,
      help: `the public listener of TLS and HTTPS edges, routed by SNI${off}`,
    },
    [`${prefix}http-addr`]: {
      type: 'string',
      value: 'ADDR',
      default: LISTENER_OFF,
      help: 'plain HTTP (port 80 in production): answers ACME HTTP-01 challenges and redirects everything else to HTTPS',
    },
    [`${prefix}https-redirect-port`]: {
      type: 'string',
      value: 'PORT',
      default: '443',
      help: 'the public HTTPS port the plain-HTTP listener redirects to',
    },
    [`${prefix}ssh-addr`]: {
      type: 'string',
      value: 'ADDR',
      default: defaults.sshAddr,
      help: `where OpenSSH clients open tunnels${off}`,
    },
    [`${prefix}tcp-host`]: {
      type: 'string',
      value: 'HOST',
      default: defaults.tcpHost,
      help: "the interface TCP edges' ports listen on",
    },
    [`${prefix}region`]: {
      type: 'string',
      value: 'R',
      default: 'us',
      help: 'the region whose reserved addresses this edge serves',
    },
    [`${prefix}relay-addr`]: {
      type: 'string',
      value: 'ADDR',
      default: defaults.relayAddr,
      help: `where other edges pass connections for sessions held here (TLS with a key derived from the edge key)${off}`,
    },
    [`${prefix}advertise-tunnel-addr`]: {
      type: 'string',
      value: 'HOST:PORT',
      defaultText: 'the tunnel address when it names one interface',
      help: "where agents reach this edge directly (besides the edges' shared address); they hold a session on each edge",
    },
    [`${prefix}advertise-relay-addr`]: {
      type: 'string',
      value: 'HOST:PORT',
      defaultText: 'the relay address when it names one interface',
      help: "where other edges reach this edge's relay (e.g. the pod IP in Kubernetes)",
    },
    [`${prefix}drain-delay`]: {
      type: 'string',
      value: 'S',
      default: '0',
      help: 'on SIGTERM, the seconds /readyz fails while the edge still serves, so load balancers stop sending first',
    },
    [`${prefix}drain-timeout`]: {
      type: 'string',
      value: 'S',
      default: '10',
      help: 'on SIGTERM, the seconds open connections may take to finish before they are cut',
    },
    ...httpsClientFlags(prefix),
    ...agentEndpointFlags(prefix),
    ...sessionLivenessFlags(prefix),
    [`${prefix}metrics-addr`]: {
      type: 'string',
      value: 'ADDR',
      default: defaults.metricsAddr,
      help: `/metrics, /healthz and /readyz${off}`,
    },
    [`${prefix}tunnel-cert`]: {
      type: 'string',
      value: 'FILE',
      help: "the tunnel endpoint's certificate (PEM) ...",
    },
    [`${prefix}tunnel-key`]: {
      type: 'string',
      value: 'FILE',
      help: '... and its key; without them a certificate is generated once in the data directory',
    },
    [`${prefix}tunnel-name`]: {
      type: 'string',
      value: 'NAME',
      multiple: true,
      defaultText: `localhost, 127.0.0.1, ${hostname()}`,
      help: 'a name of the generated certificate (repeatable)',
    },
    [`${prefix}ssh-host-key`]: {
      type: 'string',
      value: 'FILE',
      help: "the SSH endpoint's host key (PEM); without it one is generated once in the data directory",
    },
    [`${prefix}idp-ca`]: {
      type: 'string',
      value: 'FILE',
      help: 'CA certificates (PEM) trusted, besides the system ones, when HTTPS routes call OAuth and OIDC providers',
    },
  };
}

const seconds = (ms: number) => String(ms / 1000);

/** `--https-*`: what an HTTPS client may take of the edge (slow heads, idle connections, header fields). */
function httpsClientFlags(prefix: string): Flags {
  const limits = DEFAULT_HTTPS_CLIENT_LIMITS;
  return {
    [`${prefix}https-header-timeout`]: {
      type: 'string',
      value: 'S',
      default: seconds(limits.headerTimeoutMs),
      help: "HTTPS clients' seconds for the TLS handshake, then for each request's head (slowloris)",
    },
    [`${prefix}https-request-timeout`]: {
      type: 'string',
      value: 'S',
      default: seconds(limits.requestTimeoutMs),
      help: 'seconds for an HTTPS request to arrive whole, body included (responses and WebSockets are not cut)',
    },
    [`${prefix}https-idle-timeout`]: {
      type: 'string',
      value: 'S',
      default: seconds(limits.idleTimeoutMs),
      help: 'seconds an HTTPS keep-alive connection (HTTP/2: a session without a stream) may wait for a request',
    },
    [`${prefix}https-max-headers`]: {
      type: 'string',
      value: 'N',
      default: String(limits.maxHeaders),
      help: 'header fields an HTTPS request may carry; more are answered 431',
    },
  };
}

/** The HTTPS client limits of `edgeFlags(prefix, …)`' values (`flag` reads one by its unprefixed name). */
export function parseHttpsClientLimits(
  flag: (name: string) => string | undefined,
  prefix: string,
): HttpsClientLimits {
  const timeout = (name: string, fallback: number) => secondsFlag(flag, prefix, name, fallback, 86_400);
  const defaults = DEFAULT_HTTPS_CLIENT_LIMITS;
  const limits: HttpsClientLimits = {
    headerTimeoutMs: timeout('https-header-timeout', defaults.headerTimeoutMs),
    requestTimeoutMs: timeout('https-request-timeout', defaults.requestTimeoutMs),
    idleTimeoutMs: timeout('https-idle-timeout', defaults.idleTimeoutMs),
    maxHeaders: defaults.maxHeaders,
  };
  const maxHeaders = flag('https-max-headers');
  if (maxHeaders !== undefined) {
    limits.maxHeaders = Number(maxHeaders);
    if (!/^\d+$/.test(maxHeaders) || limits.maxHeaders < 1 || limits.maxHeaders > 1000) {
      throw new Error(`--${prefix}https-max-headers: '${maxHeaders}' is not a count from 1 to 1000`);
    }
  }
  // A head is part of its request: a shorter request timeout would make the header one moot.
  if (limits.headerTimeoutMs > limits.requestTimeoutMs) {
    throw new Error(
      `--${prefix}https-header-timeout: ${limits.headerTimeoutMs / 1000} s is longer than --${prefix}https-request-timeout`,
    );
  }
  return limits;
}

/** What a connection to the tunnel or SSH endpoint may take before it authenticates. */
function agentEndpointFlags(prefix: string): Flags {
  const limits = UNAUTHENTICATED_DEFAULTS;
  return {
    [`${prefix}handshake-timeout`]: {
      type: 'string',
      value: 'S',
      default: String(limits.handshakeTimeoutMs / 1000),
      help: "seconds for an agent's TLS handshake, then again for its hello; for an SSH client's key exchange",
    },
    [`${prefix}ssh-auth-timeout`]: {
      type: 'string',
      value: 'S',
      default: String(limits.sshAuthTimeoutMs / 1000),
      help: 'seconds an SSH client may take to authenticate',
    },
    [`${prefix}max-unauthenticated-per-source`]: {
      type: 'string',
      value: 'N',
      default: String(limits.maxPerSource),
      help: 'connections one address may hold on the tunnel and SSH endpoints before authenticating; more are closed',
    },
  };
}

/** How the edge pings its sessions' agents (see `SESSION_LIVENESS`). */
function sessionLivenessFlags(prefix: string): Flags {
  const seconds = (ms: number) => String(ms / 1000);
  return {
    [`${prefix}session-ping-interval`]: {
      type: 'string',
      value: 'S',
      default: seconds(SESSION_LIVENESS.intervalMs),
      help: "seconds between pings of each session's agent (HTTP/2 PING; SSH keepalives for OpenSSH)",
    },
    [`${prefix}session-ping-grace`]: {
      type: 'string',
      value: 'S',
      default: seconds(SESSION_LIVENESS.overdueMs),
      help: 'seconds past a ping interval without a sign of life before a session leaves rotation',
    },
    [`${prefix}session-ping-timeout`]: {
      type: 'string',
      value: 'S',
      default: seconds(SESSION_LIVENESS.timeoutMs),
      help: 'seconds past a ping interval without a sign of life before a session is closed',
    },
  };
}

/** The settings of `sessionLivenessFlags` (`flag` reads one by its unprefixed name). */
export function parseSessionLiveness(
  flag: (name: string) => string | undefined,
  prefix: string,
): SessionLivenessSettings {
  const settings = {
    intervalMs: secondsFlag(flag, prefix, 'session-ping-interval', SESSION_LIVENESS.intervalMs, 3600),
    overdueMs: secondsFlag(flag, prefix, 'session-ping-grace', SESSION_LIVENESS.overdueMs, 3600),
    timeoutMs: secondsFlag(flag, prefix, 'session-ping-timeout', SESSION_LIVENESS.timeoutMs, 3600),
  };
  if (settings.overdueMs >= settings.timeoutMs)
    throw new Error(`--${prefix}session-ping-grace: must be shorter than --${prefix}session-ping-timeout`);
  return settings;
}

/** The limits of `agentEndpointFlags` (`flag` reads one by its unprefixed name). */
export function parseUnauthenticatedLimits(
  flag: (name: string) => string | undefined,
  prefix: string,
): Required<UnauthenticatedLimits> {
  const timeout = (name: string, fallback: number) => secondsFlag(flag, prefix, name, fallback, 3600);
  const defaults = UNAUTHENTICATED_DEFAULTS;
  const perSource = flag('max-unauthenticated-per-source') ?? String(defaults.maxPerSource);
  const maxPerSource = Number(perSource);
  if (!/^\d+$/.test(perSource) || maxPerSource < 1 || maxPerSource > 100_000) {
    throw new Error(
      `--${prefix}max-unauthenticated-per-source: '${perSource}' is not a count from 1 to 100000`,
    );
  }
  return {
    handshakeTimeoutMs: timeout('handshake-timeout', defaults.handshakeTimeoutMs),
    sshAuthTimeoutMs: timeout('ssh-auth-timeout', defaults.sshAuthTimeoutMs),
    maxPerSource,
  };
}
