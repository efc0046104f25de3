import { hostname } from 'node:os';
import type { Flags } from '../lib/flags.js';
import { LISTENER_OFF } from '../lib/listen-address.js';

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
    [`${prefix}drain-timeout`]: {
      type: 'string',
      value: 'S',
      default: '10',
      help: 'on SIGTERM, the seconds open connections may take to finish before they are cut',
    },
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
