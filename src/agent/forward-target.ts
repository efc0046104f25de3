import net from 'node:net';
import tls from 'node:tls';

/** Where an agent sends what it carries: `tcp://host:port`, `tls://host:port` or `http://host:port`. */
export interface ForwardTarget {
  protocol: 'tcp' | 'tls' | 'http';
  host: string;
  port: number;
}

const DEFAULT_PORTS = { http: 80, tls: 443 } as const;

export function parseForwardTarget(text: string): ForwardTarget {
  let url: URL;
  try {
    url = new URL(text);
  } catch (error) {
    throw new Error(`--forward: '${text}' is not a URL such as tcp://127.0.0.1:5432`, { cause: error });
  }
  const protocol = url.protocol.slice(0, -1);
  if (protocol !== 'tcp' && protocol !== 'tls' && protocol !== 'http') {
    throw new Error(`--forward: protocol must be tcp, tls or http, not ${protocol}`);
  }
  if (url.pathname !== '' && url.pathname !== '/') throw new Error('--forward: takes no path');
  const port = url.port ? Number(url.port) : protocol === 'tcp' ? undefined : DEFAULT_PORTS[protocol];
  if (!port) throw new Error('--forward: tcp:// needs a port');
  // URL keeps IPv6 literals bracketed.
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return { protocol, host, port };
}

/**
 * Connects to the target; resolves once the connection is up. Half-open: a service that finishes
 * sending and closes its side must not cut the stream while its last bytes wait on flow control.
 */
export function dialTarget(target: ForwardTarget): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket =
      target.protocol === 'tls'
        ? tls.connect({
            socket: net.connect({ host: target.host, port: target.port, allowHalfOpen: true }),
            // SNI carries names only; an IP literal there is deprecated.
            ...(net.isIP(target.host) ? {} : { servername: target.host }),
          })
        : net.connect({ host: target.host, port: target.port, allowHalfOpen: true });
    const ready = target.protocol === 'tls' ? 'secureConnect' : 'connect';
    socket.once(ready, () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}
