import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { loadSecretKey } from '../crypto/secret-key-file.js';
import { edgeKeyFor } from '../server/data-plane/edge-key.js';
import { startServer } from '../server/start.js';
import {
  EDGE_FLAGS_HELP,
  type EdgeFlagDefaults,
  edgeFlagOptions,
  parsePortRange,
  TCP_PORT_RANGE_OPTION,
} from './edge-flags.js';

/** `--edge`: one edge in the same process, on loopback unless told otherwise. */
const EDGE_DEFAULTS: EdgeFlagDefaults = {
  tunnelAddr: '127.0.0.1:4443',
  tlsAddr: '127.0.0.1:8443',
  sshAddr: '127.0.0.1:2222',
  tcpHost: '127.0.0.1',
  metricsAddr: 'off',
};

const HELP = `usage: edgeward server [flags]

  --data-dir DIR        where the SQLite file and the secret key live (default ./edgeward-data)
  --database-url URL    postgres://... to share one account between replicas (instead of SQLite)
  --host HOST           listen address (default 127.0.0.1)
  --port PORT           listen port (default 4040)
  --base-url URL        public URL of the API, used in every "uri" (default: the listen address)
  --tls-cert FILE       serve HTTPS with this certificate chain (PEM) ...
  --tls-key FILE        ... and this private key (PEM)
  --tcp-addr-domain D   DNS suffix of reserved TCP addresses (default tcp.edgeward.dev)
                        (--tcp-port-range, below, also sets the ports new reserved addresses get)
  --rate-limit N        requests per minute per API key owner, 0 disables (default 12000)
  --no-event-delivery   do not deliver account events from this process (another replica may)
  --aws-endpoint-url U  send every AWS call (Kinesis, Firehose, CloudWatch Logs, STS) to U instead
                        of AWS (a local emulator, a VPC endpoint); env EDGEWARD_AWS_ENDPOINT_URL
  --datadog-url URL     Datadog's logs intake base URL instead of https://http-intake.logs.<ddsite>;
                        env EDGEWARD_DATADOG_URL
  --event-retention D   keep delivered events for D (e.g. 7d, 36h; default 7d); undelivered ones stay
  --print-edge-key      print the key edges authenticate with (EDGEWARD_EDGE_KEY of edgeward edge), then exit
  --edge                also run an edge (the data plane) in this process; its files go to DIR/edge
${EDGE_FLAGS_HELP('edge-', EDGE_DEFAULTS)}
environment:
  EDGEWARD_ADMIN_API_KEY  admin API key to bootstrap; without it one is generated and printed once
  EDGEWARD_SECRET_KEY     base64 32-byte key sealing secrets at rest (default: DIR/secret.key)
  EDGEWARD_EDGE_KEY       the key edges present (default: derived from the secret key)
  LOG_LEVEL               pino log level (default info)
`;

export async function serverCommand(argv: string[]): Promise<number | undefined> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'data-dir': { type: 'string', default: './edgeward-data' },
      'database-url': { type: 'string' },
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '4040' },
      'base-url': { type: 'string' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      'tcp-addr-domain': { type: 'string' },
      'rate-limit': { type: 'string' },
      'print-edge-key': { type: 'boolean' },
      'no-event-delivery': { type: 'boolean' },
      'aws-endpoint-url': { type: 'string' },
      'datadog-url': { type: 'string' },
      'event-retention': { type: 'string', default: '7d' },
      edge: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
      ...edgeFlagOptions('edge-', EDGE_DEFAULTS),
      ...TCP_PORT_RANGE_OPTION,
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const dataDir = values['data-dir'] ?? './edgeward-data';
  if (values['print-edge-key']) {
    const secretKey = loadSecretKey(dataDir, process.env.EDGEWARD_SECRET_KEY);
    process.stdout.write(`${edgeKeyFor(secretKey, process.env.EDGEWARD_EDGE_KEY)}\n`);
    return 0;
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--port: '${values.port}' is not a port`);
  const rateLimit = values['rate-limit'] === undefined ? undefined : Number(values['rate-limit']);
  if (rateLimit !== undefined && (!Number.isInteger(rateLimit) || rateLimit < 0)) {
    throw new Error(`--rate-limit: '${values['rate-limit']}' is not a whole number`);
  }
  const eventDelivery = values['no-event-delivery']
    ? undefined
    : {
        awsEndpointUrl: values['aws-endpoint-url'] ?? (process.env.EDGEWARD_AWS_ENDPOINT_URL || undefined),
        datadogUrl: values['datadog-url'] ?? (process.env.EDGEWARD_DATADOG_URL || undefined),
        retentionMs: parseDuration(values['event-retention'] ?? '7d', '--event-retention'),
      };
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
    tcpPortRange: parsePortRange(values['tcp-port-range'] ?? '10000-65535', '--tcp-port-range'),
    rateLimitPerMinute: rateLimit,
    adminApiKey: process.env.EDGEWARD_ADMIN_API_KEY,
    secretKey: process.env.EDGEWARD_SECRET_KEY,
    edgeKey: process.env.EDGEWARD_EDGE_KEY,
    eventDelivery,
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
}

const DURATION_UNITS_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90m`, `36h`, `7d` -> milliseconds. */
function parseDuration(text: string, flag: string): number {
  const match = /^(\d+)([mhd])$/.exec(text);
  const unit = match?.[2] === undefined ? undefined : DURATION_UNITS_MS[match[2]];
  if (!match || unit === undefined || Number(match[1]) === 0) {
    throw new Error(`${flag}: '${text}' is not a duration like 90m, 36h or 7d`);
  }
  return Number(match[1]) * unit;
}
