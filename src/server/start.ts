import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
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
