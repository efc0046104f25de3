import { join } from 'node:path';
import { DEFAULT_MAX_JSON_DEPTH, MAX_JSON_DEPTH_CEILING } from '../server/plugins/parsed-body-check.js';
import { ACME_FLAGS, acmeSettingsOf } from './acme-flags.js';
import { defineCommand, UsageError } from './command.js';
import { type EdgeFlagDefaults, edgeFlags, parsePortRange, TCP_PORT_RANGE_FLAG } from './edge-flags.js';

/** `--edge`: one edge in the same process, on loopback unless told otherwise. */
const EDGE_DEFAULTS: EdgeFlagDefaults = {
  tunnelAddr: '127.0.0.1:4443',
  tlsAddr: '127.0.0.1:8443',
  sshAddr: '127.0.0.1:2222',
  tcpHost: '127.0.0.1',
  metricsAddr: 'off',
  // One process serving everything needs no relay; edges that share the load turn it on.
  relayAddr: 'off',
};

export const serverCommand = defineCommand({
  name: 'server',
  summary: 'run the control plane: the management API (with --edge, also an edge)',
  description:
    'The control plane: the management API over HTTP(S), on SQLite in --data-dir or on PostgreSQL.',
  flags: {
    'data-dir': {
      type: 'string',
      value: 'DIR',
      default: './edgeward-data',
      help: 'where the SQLite file (edgeward.sqlite) and the secret key (secret.key) live',
    },
    'database-url': {
      type: 'string',
      value: 'URL',
      help: 'postgres://... to share one account between replicas (instead of SQLite)',
    },
    host: { type: 'string', value: 'HOST', default: '127.0.0.1', help: 'the listen address' },
    port: { type: 'string', value: 'PORT', default: '4040', help: 'the listen port' },
    'base-url': {
      type: 'string',
      value: 'URL',
      defaultText: 'the listen address',
      help: 'the public URL of the API, used in every "uri"',
    },
    'tls-cert': { type: 'string', value: 'FILE', help: 'serve HTTPS with this certificate chain (PEM) ...' },
    'tls-key': { type: 'string', value: 'FILE', help: '... and this private key (PEM)' },
    'tcp-addr-domain': {
      type: 'string',
      value: 'DOMAIN',
      default: 'tcp.edgeward.dev',
      help: 'the DNS suffix of reserved TCP addresses',
    },
    ...TCP_PORT_RANGE_FLAG,
    'rate-limit': {
      type: 'string',
      value: 'N',
      default: '12000',
      help: 'requests per minute per API key owner; 0 sets no limit',
    },
    'max-json-depth': {
      type: 'string',
      value: 'N',
      default: String(DEFAULT_MAX_JSON_DEPTH),
      help: 'how deeply the arrays and objects of a request body may nest; deeper is a 400 naming the field',
    },
    'no-event-delivery': {
      type: 'boolean',
      help: 'do not deliver account events from this process (another replica may)',
    },
    'aws-endpoint-url': {
      type: 'string',
      value: 'URL',
      help: 'send every AWS call (Kinesis, Firehose, CloudWatch Logs, STS) to URL instead of AWS (a local emulator, a VPC endpoint); env EDGEWARD_AWS_ENDPOINT_URL',
    },
    'datadog-url': {
      type: 'string',
      value: 'URL',
      help: "Datadog's logs intake base URL instead of https://http-intake.logs.<ddsite>; env EDGEWARD_DATADOG_URL",
    },
    'event-retention': {
      type: 'string',
      value: 'D',
      default: '7d',
      help: 'keep delivered events for D (90m, 36h, 7d); undelivered ones stay',
    },
    ...ACME_FLAGS,
    'print-edge-key': {
      type: 'boolean',
      help: 'print the key edges authenticate with (EDGEWARD_EDGE_KEY of edgeward edge), then exit; makes DIR/secret.key if the server has not started yet',
    },
    edge: {
      type: 'boolean',
      help: 'also run an edge (the data plane) in this process, with the --edge-* flags below; its files go to DIR/edge',
    },
    ...edgeFlags('edge-', EDGE_DEFAULTS),
  },
  footer: `environment:
  EDGEWARD_ADMIN_API_KEY  admin API key to bootstrap; without it one is generated and printed once
  EDGEWARD_SECRET_KEY     base64 32-byte key sealing secrets at rest (default: DIR/secret.key)
  EDGEWARD_EDGE_KEY       the key edges present (default: derived from the secret key)
  LOG_LEVEL               pino log level (default info)`,
  run: async (values) => {
    const dataDir = values['data-dir'];
    if (values['print-edge-key']) {
      if (values['database-url'] && !process.env.EDGEWARD_SECRET_KEY) {
        // The server refuses this too: a key generated here would be no replica's.
        throw new UsageError(
          '--print-edge-key with --database-url needs EDGEWARD_SECRET_KEY, the key every replica shares: the edge key is derived from it',
        );
      }
      const { loadSecretKey } = await import('../crypto/secret-key-file.js');
      const { edgeKeyFor } = await import('../server/data-plane/edge-key.js');
      const secretKey = loadSecretKey(dataDir, process.env.EDGEWARD_SECRET_KEY);
      process.stdout.write(`${edgeKeyFor(secretKey, process.env.EDGEWARD_EDGE_KEY)}\n`);
      return 0;
    }
    const port = Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      throw new UsageError(`--port: '${values.port}' is not a port`);
    const rateLimit = Number(values['rate-limit']);
    if (!Number.isInteger(rateLimit) || rateLimit < 0) {
      throw new UsageError(`--rate-limit: '${values['rate-limit']}' is not a whole number`);
    }
    const maxJsonDepth = Number(values['max-json-depth']);
    if (!Number.isInteger(maxJsonDepth) || maxJsonDepth < 1 || maxJsonDepth > MAX_JSON_DEPTH_CEILING) {
      throw new UsageError(
        `--max-json-depth: '${values['max-json-depth']}' is not a whole number from 1 to ${MAX_JSON_DEPTH_CEILING}`,
      );
    }
    const eventDelivery = values['no-event-delivery']
      ? undefined
      : {
          awsEndpointUrl: values['aws-endpoint-url'] ?? (process.env.EDGEWARD_AWS_ENDPOINT_URL || undefined),
          datadogUrl: values['datadog-url'] ?? (process.env.EDGEWARD_DATADOG_URL || undefined),
          retentionMs: parseDuration(values['event-retention'], '--event-retention'),
        };
    const acme = acmeSettingsOf(values);
    const { default: pino } = await import('pino');
    const { startServer } = await import('../server/start.js');
    const logger = pino({
      level: process.env.LOG_LEVEL ?? 'info',
      // Belt and braces: no code path logs these, and if one ever did they would be masked.
      redact: ['req.headers.authorization', '*.token', '*.private_key_pem', '*.secret'],
    });
    const server = await startServer({
      dataDir,
      databaseUrl: values['database-url'],
      host: values.host,
      port,
      baseUrl: values['base-url'],
      tlsCertFile: values['tls-cert'],
      tlsKeyFile: values['tls-key'],
      tcpAddrDomain: values['tcp-addr-domain'],
      tcpPortRange: parsePortRange(values['tcp-port-range'], '--tcp-port-range'),
      rateLimitPerMinute: rateLimit,
      maxJsonDepth,
      adminApiKey: process.env.EDGEWARD_ADMIN_API_KEY,
      secretKey: process.env.EDGEWARD_SECRET_KEY,
      edgeKey: process.env.EDGEWARD_EDGE_KEY,
      eventDelivery,
      acme,
      logger,
    });
    if (server.bootstrap.generatedAdminKey) {
      // Printed once, to stdout only (not the log stream), then only its hash exists.
      process.stdout.write(
        `\nGenerated admin API key (shown once, store it now):\n  ${server.bootstrap.generatedAdminKey}\n\n`,
      );
    }
    logger.info({ listen: server.listenUrl, baseUrl: server.settings.baseUrl }, 'edgeward server ready');
    // Loaded only with --edge: a control plane alone does not carry the data plane's code.
    const edge = values.edge
      ? await (await import('./edge-runtime.js')).startEdgeFromFlags(values, 'edge-', {
          apiUrl: server.listenUrl,
          edgeKey: server.edgeKey,
          dataDir: join(dataDir, 'edge'),
          logger: logger.child({ component: 'edge' }),
        })
      : undefined;
    const shutdown = (signal: string) => {
      logger.info({ signal }, 'shutting down');
      // The edge drains first, while the control plane can still hear its sessions end.
      (edge ? edge.stop() : Promise.resolve())
        .then(() => server.app.close())
        .then(
          () => process.exit(0),
          (err: unknown) => {
            logger.error({ err }, 'shutdown failed');
            process.exit(1);
          },
        );
    };
    process.once('SIGTERM', () => shutdown('SIGTERM'));
    process.once('SIGINT', () => shutdown('SIGINT'));
    return undefined;
  },
});

const DURATION_UNITS_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90m`, `36h`, `7d` -> milliseconds. */
function parseDuration(text: string, flag: string): number {
  const match = /^(\d+)([mhd])$/.exec(text);
  const unit = match?.[2] === undefined ? undefined : DURATION_UNITS_MS[match[2]];
  if (!match || unit === undefined || Number(match[1]) === 0) {
    throw new UsageError(`${flag}: '${text}' is not a duration like 90m, 36h or 7d`);
  }
  return Number(match[1]) * unit;
}
