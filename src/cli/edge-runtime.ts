import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { Edge } from '../edge/edge.js';
import { startMetricsServer } from '../edge/metrics-server.js';
import { loadSshHostKey, sshHostKeyPath } from '../edge/ssh-host-key.js';
import { loadTunnelCertificate } from '../edge/tunnel-certificate.js';
import { isSpecificHost, parseAdvertisedAddress, parseListenAddress } from '../lib/listen-address.js';
import { type WatchedFiles, watchFiles } from '../lib/watched-files.js';
import {
  parseHttpsClientLimits,
  parsePortRange,
  parseSessionLiveness,
  parseUnauthenticatedLimits,
} from './edge-flags.js';

type FlagValues = Record<string, string | boolean | string[] | undefined>;

const text = (values: FlagValues, name: string): string | undefined => {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
};

function parseSeconds(value: string, flag: string): number {
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds < 0 || seconds > 3600) {
    throw new Error(`${flag}: '${value}' is not a number of seconds (0..3600)`);
  }
  return seconds;
}

/** The certificates of a PEM bundle file, or undefined without a file. */
function readPemBundle(file: string | undefined, flag: string): string[] | undefined {
  if (!file) return undefined;
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(`${flag}: cannot read ${file}`, { cause: error });
  }
  const certificates = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g);
  if (!certificates) throw new Error(`${flag}: ${file} holds no PEM certificate`);
  return certificates;
}

/** Starts an edge from the flags of `edgeFlags(prefix, …)`; resolves once it serves. */
export async function startEdgeFromFlags(
  values: FlagValues,
  prefix: string,
  context: { apiUrl: string | readonly string[]; edgeKey: string; dataDir: string; logger: Logger },
): Promise<{ edge: Edge; stop(): Promise<void> }> {
  const flag = (name: string) => text(values, `${prefix}${name}`);
  const tunnelAddr = parseListenAddress(flag('tunnel-addr') ?? '', `--${prefix}tunnel-addr`);
  if (!tunnelAddr) throw new Error(`--${prefix}tunnel-addr: the tunnel endpoint cannot be off`);
  const sshAddr = parseListenAddress(flag('ssh-addr') ?? 'off', `--${prefix}ssh-addr`);
  const tlsAddr = parseListenAddress(flag('tls-addr') ?? 'off', `--${prefix}tls-addr`);
  const httpAddr = parseListenAddress(flag('http-addr') ?? 'off', `--${prefix}http-addr`);
  const httpsRedirectPort = Number(flag('https-redirect-port') ?? '443');
  if (!Number.isInteger(httpsRedirectPort) || httpsRedirectPort < 1 || httpsRedirectPort > 65535)
    throw new Error(`--${prefix}https-redirect-port: '${flag('https-redirect-port')}' is not a port`);
  const metricsAddr = parseListenAddress(flag('metrics-addr') ?? 'off', `--${prefix}metrics-addr`);
  const relayAddr = parseListenAddress(flag('relay-addr') ?? 'off', `--${prefix}relay-addr`);
  const advertised = (name: string) => {
    const text = flag(name);
    return text === undefined ? undefined : parseAdvertisedAddress(text, `--${prefix}${name}`);
  };
  const advertise = {
    tunnelAddr: advertised('advertise-tunnel-addr'),
    relayAddr: advertised('advertise-relay-addr'),
  };
  if (relayAddr && !isSpecificHost(relayAddr.host) && !advertise.relayAddr) {
    context.logger.warn(
      { relayAddr: flag('relay-addr') },
      `the relay listens on every interface and --${prefix}advertise-relay-addr is not set: other edges cannot pass connections to this one`,
    );
  }
  const names = (values[`${prefix}tunnel-name`] as string[] | undefined) ?? [
    'localhost',
    '127.0.0.1',
    hostname(),
  ];
  const tunnelTls = await loadTunnelCertificate({
    certFile: flag('tunnel-cert'),
    keyFile: flag('tunnel-key'),
    dataDir: context.dataDir,
    names,
  });
  if (tunnelTls.generatedAt) {
    context.logger.info(
      { file: tunnelTls.generatedAt, names },
      'generated the tunnel certificate; give it to agents with --edge-ca',
    );
  }
  const sshHostKey = { file: flag('ssh-host-key'), dataDir: context.dataDir };
  const edge = new Edge({
    apiUrl: context.apiUrl,
    edgeKey: context.edgeKey,
    region: flag('region') ?? 'us',
    tunnel: { ...tunnelAddr, tls: tunnelTls },
    tls: tlsAddr,
    http: httpAddr && { ...httpAddr, httpsPort: httpsRedirectPort },
    ssh: sshAddr && {
      ...sshAddr,
      hostKeys: [loadSshHostKey(sshHostKey)],
    },
    tcpHost: flag('tcp-host') ?? '0.0.0.0',
    tcpPortRange: parsePortRange(text(values, 'tcp-port-range') ?? '10000-65535', '--tcp-port-range'),
    logger: context.logger,
    identityProviderCas: readPemBundle(flag('idp-ca'), `--${prefix}idp-ca`),
    drainTimeoutMs: parseSeconds(flag('drain-timeout') ?? '10', `--${prefix}drain-timeout`) * 1000,
    drainDelayMs: parseSeconds(flag('drain-delay') ?? '0', `--${prefix}drain-delay`) * 1000,
    relay: relayAddr,
    advertise,
    httpsClientLimits: parseHttpsClientLimits(flag, prefix),
    unauthenticatedLimits: parseUnauthenticatedLimits(flag, prefix),
    sessionLiveness: parseSessionLiveness(flag, prefix),
  });
  await edge.start();
  const reloads = watchEdgeFiles(edge, context.logger, {
    tunnelCertificate: tunnelTls.files,
    sshHostKey: sshAddr ? sshHostKeyPath(sshHostKey) : undefined,
  });
  const metrics = metricsAddr
    ? await startMetricsServer(edge.metrics.registry, () => edge.ready, metricsAddr.host, metricsAddr.port)
    : undefined;
  context.logger.info(
    {
      tunnelPort: edge.tunnelPort,
      tlsPort: edge.tlsPort || undefined,
      httpPort: edge.httpPort || undefined,
      sshPort: edge.sshPort || undefined,
      relayPort: edge.relayPort || undefined,
      metricsPort: metrics?.port,
      edgeProcessId: edge.id,
    },
    'edgeward edge ready',
  );
  return {
    edge,
    async stop() {
      for (const reload of reloads) reload.close();
      metrics?.server.close();
      await edge.stop();
    },
  };
}

/**
 * The edge's own key material is re-read when its files change (a renewed certificate, a rotated
 * Secret mounted by Kubernetes): new handshakes get the new one, sessions stay up. A pair that does
 * not parse or match is logged and the old one kept.
 */
function watchEdgeFiles(
  edge: Edge,
  logger: Logger,
  files: { tunnelCertificate: [string, string]; sshHostKey: string | undefined },
): WatchedFiles[] {
  const kept = (what: string) => (error: Error) =>
    logger.warn({ err: error }, `kept the current ${what}: its files changed but could not be used`);
  const watches = [
    watchFiles(
      files.tunnelCertificate,
      ([cert = '', key = '']) => {
        edge.setTunnelCertificate({ cert, key });
        const certificate = new X509Certificate(cert);
        logger.info(
          {
            file: files.tunnelCertificate[0],
            serial: certificate.serialNumber,
            validTo: certificate.validTo,
          },
          'reloaded the tunnel certificate: new agent connections get it, sessions stay',
        );
      },
      { onError: kept('tunnel certificate') },
    ),
  ];
  if (files.sshHostKey) {
    const file = files.sshHostKey;
    watches.push(
      watchFiles(
        [file],
        ([key = '']) => {
          edge.setSshHostKeys([key]);
          logger.info({ file }, 'reloaded the SSH host key: new connections are offered it, sessions stay');
        },
        { onError: kept('SSH host key') },
      ),
    );
  }
  return watches;
}
