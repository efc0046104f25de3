import { createHmac } from 'node:crypto';
import type { ConnectionOptions, TlsOptions } from 'node:tls';

/**
 * Edges talk to each other over TLS with a pre-shared key (RFC 4279, with ECDHE for forward
 * secrecy) derived from the edge key every edge holds: both ends prove they hold it, so a relay
 * connection needs no certificate and no one without the edge key can open or answer one. HTTP/2
 * (ALPN `h2`) runs inside, as on the agents' connections.
 */
const IDENTITY = 'edgeward-relay/1';
const CIPHER = 'ECDHE-PSK-CHACHA20-POLY1305';
export const RELAY_ALPN = 'h2';

/** The key both ends derive; never the edge key itself. */
export function relayKey(edgeKey: string): Buffer {
  return createHmac('sha256', edgeKey).update('edgeward edge relay').digest();
}

export function relayServerTls(edgeKey: string): TlsOptions {
  const key = relayKey(edgeKey);
  return {
    pskCallback: (_socket, identity) => (identity === IDENTITY ? key : null),
    ciphers: CIPHER,
    // TLS-PSK is a TLS 1.2 mechanism in OpenSSL's API as Node exposes it.
    maxVersion: 'TLSv1.2',
    minVersion: 'TLSv1.2',
    ALPNProtocols: [RELAY_ALPN],
  };
}

export function relayClientTls(edgeKey: string): ConnectionOptions {
  const key = relayKey(edgeKey);
  return {
    pskCallback: () => ({ psk: key, identity: IDENTITY }),
    ciphers: CIPHER,
    maxVersion: 'TLSv1.2',
    minVersion: 'TLSv1.2',
    ALPNProtocols: [RELAY_ALPN],
    // The peer is authenticated by the key: it has no certificate to check.
    checkServerIdentity: () => undefined,
  };
}
