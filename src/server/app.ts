import { mkdirSync } from 'node:fs';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { randomId } from '../crypto/ids.js';
import { SecretBox } from '../crypto/secret-box.js';
import { loadSecretKey } from '../crypto/secret-key-file.js';
import { rfc3339 } from '../lib/rfc3339.js';
import type { AcmeSettings } from './acme/acme-settings.js';
import { CertificateManager } from './acme/certificate-manager.js';
import { authPlugin } from './auth/auth-plugin.js';
import { PrincipalCache } from './auth/principal-cache.js';
import { EdgeFeed } from './data-plane/edge-feed.js';
import { edgeKeyFor } from './data-plane/edge-key.js';
import { edgeFeedPlugin } from './data-plane/feed-plugin.js';
import { ChangeSignal } from './events/change-signal.js';
import { type EventDeliveryOptions, EventDispatcher } from './events/dispatcher.js';
import type { RequestContext, ServerSettings } from './http/context.js';
import { lazyChildLoggerFactory } from './http/lazy-request-logger.js';
import type { AnyRouteDefinition } from './http/route.js';
import { idempotencyJanitor } from './idempotency/janitor.js';
import { openApiPlugin } from './openapi/openapi-plugin.js';
import { errorsPlugin, sendFrameworkError } from './plugins/errors.js';
import { jsonBodyPlugin } from './plugins/json-body.js';
import { methodNotAllowedPlugin } from './plugins/method-not-allowed.js';
import { metricsPlugin } from './plugins/metrics.js';
import { DEFAULT_RATE_LIMIT_PER_MINUTE, rateLimitPlugin } from './plugins/rate-limit.js';
import { registerRoutes } from './routes/index.js';
import { RESERVED_PORT_MAX, RESERVED_PORT_MIN } from './routes/reserved-addrs.js';
import { type BootstrapResult, bootstrapAdmin } from './store/bootstrap.js';
import { openDatabase } from './store/database.js';
import { writesBrokenOn } from './store/write-transaction.js';

export interface AppOptions {
  dataDir: string;
  databaseUrl?: string | undefined;
  /** Public URL of the API; when absent, `setBaseUrl` must be called once the listen address is known. */
  baseUrl?: string | undefined;
  tcpAddrDomain?: string | undefined;
  /** Ports of new reserved addresses (default 10000-65535). */
  tcpPortRange?: { min: number; max: number } | undefined;
  /** `EDGEWARD_ADMIN_API_KEY`: bootstraps the admin key. */
  adminApiKey?: string | undefined;
  /** `EDGEWARD_SECRET_KEY`: base64 key that seals secrets at rest. */
  secretKey?: string | undefined;
  /** A pino logger; none by default (tests). */
  logger?: FastifyBaseLogger | false;
  /** Requests per minute per API key owner; 0 disables. */
  rateLimitPerMinute?: number | undefined;
  /** How deeply a request body's arrays and objects may nest (default `DEFAULT_MAX_JSON_DEPTH`, 64). */
  maxJsonDepth?: number | undefined;
  https?: { key: Buffer; cert: Buffer } | undefined;
  /**
   * Check every handler result against its route's response schema and answer a mismatch with a
   * 500, so no response drifts from the OpenAPI document. For tests: it costs a parse per response.
   */
  validateResponses?: boolean | undefined;
  /** `EDGEWARD_EDGE_KEY`: what edges present; derived from the secret key when absent. */
  edgeKey?: string | undefined;
  /**
   * Deliver account events to event destinations from this process. Off unless given (tests stay
   * off the network); `edgeward server` turns it on unless `--no-event-delivery`.
   */
  eventDelivery?: EventDeliveryOptions | undefined;
  /** Obtain the edges' certificates by ACME; off (self-signed for names without an upload) unless given. */
  acme?: AcmeSettings | undefined;
}

export interface EdgewardApp {
  app: FastifyInstance;
  bootstrap: BootstrapResult;
  settings: ServerSettings;
  /** The key `edgeward edge` processes authenticate with. */
  edgeKey: string;
}

const BODY_LIMIT_BYTES = 1024 * 1024;

/** Builds the control plane without listening, so tests and the CLI share one assembly. */
export async function buildApp(options: AppOptions): Promise<EdgewardApp> {
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  if (options.databaseUrl && !options.secretKey) {
    // Each replica would generate its own key and could not open what the others sealed.
    throw new Error('EDGEWARD_SECRET_KEY is required with --database-url: every replica must share one key');
  }
  const store = await openDatabase({ dataDir: options.dataDir, databaseUrl: options.databaseUrl });
  const { db, reads } = store;
  const bootstrap = await bootstrapAdmin(db, options.adminApiKey);
  const secretKey = loadSecretKey(options.dataDir, options.secretKey);
  const edgeKey = edgeKeyFor(secretKey, options.edgeKey);
  const secretBox = new SecretBox(secretKey);
  const changes = new ChangeSignal();
  const settings: ServerSettings = {
    baseUrl: options.baseUrl?.replace(/\/+$/, ''),
    tcpAddrDomain: options.tcpAddrDomain ?? 'tcp.edgeward.dev',
    tcpPortRange: options.tcpPortRange ?? { min: RESERVED_PORT_MIN, max: RESERVED_PORT_MAX },
    acme: options.acme !== undefined,
  };

  const app = Fastify({
    ...(options.logger
      ? { loggerInstance: options.logger, childLoggerFactory: lazyChildLoggerFactory }
      : { logger: false }),
    bodyLimit: BODY_LIMIT_BYTES,
    genReqId: () => randomId('op'),
    requestIdHeader: false,
    frameworkErrors: sendFrameworkError,
    // An event type in a path may have 255 characters (ids have far fewer).
    routerOptions: { maxParamLength: 256 },
    ...(options.https ? { https: options.https } : {}),
  }) as unknown as FastifyInstance;

  const routes: AnyRouteDefinition[] = [];
  app.decorate('edgeward', {
    routes,
    db,
    reads,
    validateResponses: options.validateResponses ?? false,
    changes,
    contextFor(request, handlerDb): RequestContext {
      const principal = request.principal;
      if (!principal) throw new Error(`route ${request.url} ran without an authenticated principal`);
      let unchanged = false;
      return {
        db: handlerDb,
        principal,
        operationId: request.id,
        settings,
        secretBox,
        url: (path) => `${settings.baseUrl ?? `${request.protocol}://${request.host}`}${path}`,
        now: () => rfc3339(),
        markUnchanged: () => {
          unchanged = true;
        },
        isUnchanged: () => unchanged,
      };
    },
  });
  // Hooks that do not wait for anything take the callback form: a promise per request costs more.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('Svc-Operation-Id', request.id);
    done();
  });
  await app.register(metricsPlugin);
  const dispatcher = options.eventDelivery
    ? new EventDispatcher(db, secretBox, changes, app.log, app.metrics, options.eventDelivery)
    : undefined;
  app.decorate('eventDispatcher', dispatcher);
  const certificates = options.acme
    ? new CertificateManager(db, secretBox, changes, app.log, app.metrics, options.acme)
    : undefined;
  app.addHook('onClose', async () => {
    // The send in flight finishes and is recorded before the database closes.
    await dispatcher?.stop();
    await certificates?.stop();
    await changes.close();
    await store.destroy();
  });
  changes.on('error', (error) => app.log.warn({ err: error }, 'change notifications interrupted'));
  if (options.databaseUrl) await changes.listen(options.databaseUrl);
  const principals = new PrincipalCache();
  changes.on('principalsChanged', () => principals.invalidate());
  // A replica that cannot hear the others' revocations must not trust what it verified earlier.
  changes.on('hearing', (hearing) => principals.setEnabled(hearing));

  await app.register(errorsPlugin);
  await app.register(jsonBodyPlugin, { maxDepth: options.maxJsonDepth });
  await app.register(authPlugin, { db: reads, principals });
  await app.register(rateLimitPlugin, {
    perMinute: options.rateLimitPerMinute ?? DEFAULT_RATE_LIMIT_PER_MINUTE,
  });
  await app.register(idempotencyJanitor, { db });
  app.get('/healthz', { config: { public: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { config: { public: true } }, async () => {
    const broken = writesBrokenOn(db);
    if (broken) throw broken;
    await db.selectFrom('users').select('id').limit(1).execute();
    return { status: 'ok' };
  });
  await app.register(edgeFeedPlugin, { edgeKey, feed: new EdgeFeed(db, secretBox, changes, app.log) });
  await registerRoutes(app);
  await app.register(methodNotAllowedPlugin);
  await app.register(openApiPlugin);
  dispatcher?.start();
  certificates?.start();
  return { app, bootstrap, settings, edgeKey };
}
