import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type tls from 'node:tls';
import { watchFiles } from '../lib/watched-files.js';
import { type AppOptions, buildApp, type EdgewardApp } from './app.js';

export interface StartOptions extends Omit<AppOptions, 'https'> {
  host: string;
  port: number;
  tlsCertFile?: string | undefined;
  tlsKeyFile?: string | undefined;
}

export interface RunningServer extends EdgewardApp {
  /** The URL the server listens on (what `base_url` defaults to). */
  listenUrl: string;
}

/** Builds and listens; HTTPS when a certificate and key are given, plain HTTP for local use. */
export async function startServer(options: StartOptions): Promise<RunningServer> {
  if (Boolean(options.tlsCertFile) !== Boolean(options.tlsKeyFile)) {
    throw new Error('--tls-cert and --tls-key must be given together');
  }
  const https =
    options.tlsCertFile && options.tlsKeyFile
      ? { cert: readFileSync(options.tlsCertFile), key: readFileSync(options.tlsKeyFile) }
      : undefined;
  const built = await buildApp({ ...options, https });
  if (options.tlsCertFile && options.tlsKeyFile) {
    reloadTlsOnChange(built, [options.tlsCertFile, options.tlsKeyFile]);
  }
  await built.app.listen({ host: options.host, port: options.port });
  const address = built.app.server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const listenUrl = `${https ? 'https' : 'http'}://${host}:${address.port}`;
  const everyInterface = ['0.0.0.0', '::', ''].includes(options.host);
  if (!options.baseUrl && !everyInterface) built.settings.baseUrl = listenUrl;
  if (!options.baseUrl && everyInterface) {
    // 0.0.0.0 is no address a client can use: take each request's Host header instead, and say so.
    built.app.log.warn(
      "listening on every interface without --base-url: resource uris follow each request's Host header; set --base-url to the public URL",
    );
  }
  return { ...built, listenUrl };
}

/**
 * The server's certificate is re-read when its files change (a renewal, or a Secret Kubernetes
 * updated by swapping a symlink): new connections get it, connections already open keep theirs. A
 * pair that does not parse or match is logged and the current one kept.
 */
function reloadTlsOnChange(built: EdgewardApp, files: [cert: string, key: string]): void {
  const server = built.app.server as unknown as tls.Server;
  const watch = watchFiles(
    files,
    ([cert = '', key = '']) => {
      server.setSecureContext({ cert, key });
      const certificate = new X509Certificate(cert);
      built.app.log.info(
        { file: files[0], serial: certificate.serialNumber, validTo: certificate.validTo },
        'reloaded the TLS certificate: new connections get it',
      );
    },
    {
      onError: (error) =>
        built.app.log.warn(
          { err: error },
          'kept the current TLS certificate: its files changed but could not be used',
        ),
    },
  );
  built.app.addHook('onClose', async () => watch.close());
}
