export interface ListenAddress {
  host: string;
  port: number;
}

/** The word that turns a listener off, in every command (`0`, controller-runtime's, is taken too). */
export const LISTENER_OFF = 'off';

/**
 * A listen flag as every edgeward command takes it: `HOST:PORT`, `:PORT` (every interface),
 * `[IPv6]:PORT`, or `off` to disable the listener (undefined). Port 0 is any free port.
 * Throws naming `flag`.
 */
export function parseListenAddress(text: string, flag: string): ListenAddress | undefined {
  const trimmed = text.trim();
  if (trimmed === LISTENER_OFF || trimmed === '0') return undefined;
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(trimmed);
  const port = Number(match?.[3]);
  if (!match || !Number.isInteger(port) || port > 65_535) {
    throw new Error(`${flag}: '${text}' is not HOST:PORT, :PORT or ${LISTENER_OFF}`);
  }
  return { host: match[1] ?? (match[2] || '0.0.0.0'), port };
}

/** Whether a listener's host names one interface (so others can be told to dial it), not every one. */
export function isSpecificHost(host: string): boolean {
  return host !== '' && host !== '0.0.0.0' && host !== '::' && host !== '[::]';
}

/** `host:port`, with an IPv6 host in brackets. */
export function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * An address given to others to dial (`--advertise-*`): `HOST:PORT` with a specific host and a
 * port. Throws naming `flag`.
 */
export function parseAdvertisedAddress(text: string, flag: string): string {
  const address = parseListenAddress(text, flag);
  if (!address || !isSpecificHost(address.host) || address.port === 0)
    throw new Error(`${flag}: '${text}' is not HOST:PORT with a host others can dial`);
  return joinHostPort(address.host, address.port);
}
