import { hostname } from 'node:os';
import type { ParseArgsConfig } from 'node:util';

/** `HOST:PORT`, `:PORT` (every interface) or `[IPv6]:PORT`; `off` disables the listener. */
export function parseListenAddr(text: string, flag: string): { host: string; port: number } | undefined {
  if (text === 'off') return undefined;
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(text);
  const port = Number(match?.[3]);
  if (!match || !Number.isInteger(port) || port > 65535) {
    throw new Error(`${flag}: '${text}' is not HOST:PORT, :PORT or off`);
  }
  return { host: match[1] ?? (match[2] || '0.0.0.0'), port };
}

export function parsePortRange(text: string, flag: string): { min: number; max: number } {
  const match = /^(\d{1,5})-(\d{1,5})$/.exec(text);
  const min = Number(match?.[1]);
  const max = Number(match?.[2]);
  if (!match || min < 1 || max > 65535 || min > max)
    throw new Error(`${flag}: '${text}' is not a range like 20000-29999`);
  return { min, max };
}

/** `--tcp-port-range`: the server gives new reserved addresses ports in it, an edge serves those. */
export const TCP_PORT_RANGE_OPTION = {
  'tcp-port-range': { type: 'string', default: '10000-65535' },
} as const;

/** The data plane's flags, shared by `edgeward edge` and `edgeward server --edge` (`prefix` "edge-"). */
export function edgeFlagOptions(
  prefix: string,
  defaults: EdgeFlagDefaults,
): NonNullable<ParseArgsConfig['options']> {
  return {
    [`${prefix}tunnel-addr`]: { type: 'string', default: defaults.tunnelAddr },
    [`${prefix}tls-addr`]: { type: 'string', default: defaults.tlsAddr },
    [`${prefix}ssh-addr`]: { type: 'string', default: defaults.sshAddr },
    [`${prefix}tcp-host`]: { type: 'string', default: defaults.tcpHost },
    [`${prefix}metrics-addr`]: { type: 'string', default: defaults.metricsAddr },
    [`${prefix}region`]: { type: 'string', default: 'us' },
    [`${prefix}tunnel-cert`]: { type: 'string' },
    [`${prefix}tunnel-key`]: { type: 'string' },
    [`${prefix}tunnel-name`]: { type: 'string', multiple: true },
    [`${prefix}ssh-host-key`]: { type: 'string' },
    [`${prefix}idp-ca`]: { type: 'string' },
    'drain-timeout': { type: 'string', default: '10' },
  };
}

export interface EdgeFlagDefaults {
  tunnelAddr: string;
  tlsAddr: string;
  sshAddr: string;
  tcpHost: string;
  metricsAddr: string;
}

/** The help lines of `edgeFlagOptions`, aligned like the rest of each command's help. */
export function EDGE_FLAGS_HELP(prefix: string, defaults: EdgeFlagDefaults): string {
  const rows: [string, string][] = [
    [`--${prefix}tunnel-addr A`, `where agents connect (TLS; default ${defaults.tunnelAddr})`],
    [
      `--${prefix}tls-addr A`,
      `the public listener of TLS and HTTPS edges, routed by SNI (default ${defaults.tlsAddr}; off disables)`,
    ],
    [
      `--${prefix}ssh-addr A`,
      `where OpenSSH clients open tunnels (default ${defaults.sshAddr}; off disables)`,
    ],
    [`--${prefix}tcp-host H`, `interface of TCP edges' ports (default ${defaults.tcpHost})`],
    [
      '--tcp-port-range A-B',
      'ports of reserved addresses (the server gives them, edges serve them; default 10000-65535)',
    ],
    [`--${prefix}region R`, 'region whose reserved addresses this edge serves (default us)'],
    [
      '--drain-timeout S',
      'on SIGTERM, how long open connections may finish before they are cut (default 10)',
    ],
    [
      `--${prefix}metrics-addr A`,
      `/metrics, /healthz, /readyz (default ${defaults.metricsAddr}; off disables)`,
    ],
    [`--${prefix}tunnel-cert F`, "the tunnel endpoint's certificate (PEM) ..."],
    [`--${prefix}tunnel-key F`, '... and key; default: a certificate generated once in the data dir'],
    [
      `--${prefix}tunnel-name N`,
      `a name of the generated certificate (repeatable; default localhost, 127.0.0.1, ${hostname()})`,
    ],
    [
      `--${prefix}ssh-host-key F`,
      "the SSH endpoint's host key (PEM); default: generated once in the data dir",
    ],
    [
      `--${prefix}idp-ca F`,
      'CA certificates (PEM) trusted, besides the system ones, when HTTPS routes call OAuth/OIDC providers',
    ],
  ];
  return rows.map(([flag, text]) => `  ${flag.padEnd(22)}${text}\n`).join('');
}
