import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { Agent, fetch } from 'undici';
import { inject } from 'vitest';
import type { AcmeSettings } from '../../src/server/acme/acme-settings.js';
import type { EventDeliveryOptions } from '../../src/server/events/dispatcher.js';
import { type RunningServer, startServer } from '../../src/server/start.js';
import { createTestDatabase, type TestDatabase } from './postgres-database.js';

export const ADMIN_KEY = 'ewk_test_admin_key_for_integration_tests_only';

export interface ApiResponse<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  /** Parsed JSON, or undefined for empty bodies (204). */
  body: T;
  text: string;
}

export interface RequestOptions {
  key?: string | null;
  version?: string | null;
  headers?: Record<string, string>;
  /** Raw body text, sent as is (for malformed JSON tests). */
  rawBody?: string;
}

export interface TestServer {
  baseUrl: string;
  dataDir: string;
  /** Which store the server runs on: SQLite in `dataDir`, or a database of its own on PostgreSQL. */
  store: 'sqlite' | 'postgres';
  /** The `EDGEWARD_SECRET_KEY` given to the server (PostgreSQL); on SQLite the key file in `dataDir`. */
  secretKey: string | undefined;
  server: RunningServer;
  /** Raw HTTP against the server: assertions look at the wire, not at our client. */
  api<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    options?: RequestOptions,
  ): Promise<ApiResponse<T>>;
  /** Stops and starts again on the same data directory (or database), secret key and port. */
  restart(): Promise<void>;
  /**
   * PostgreSQL only: another server on the same database and secret key, as a second replica of
   * one deployment; stopped with this one.
   */
  startReplica(): Promise<RunningServer>;
  stop(): Promise<void>;
}

/** The store of this test project: the `postgres` project's global setup provides `postgresUrl`. */
export function projectStore(): 'sqlite' | 'postgres' {
  return (inject('postgresUrl') as string | undefined) === undefined ? 'sqlite' : 'postgres';
}

/** The superuser URL of the `postgres` project's server (see postgres-global-setup.ts). */
function postgresAdminUrl(): string | undefined {
  if (projectStore() === 'sqlite') return undefined;
  const url = inject('postgresUrl');
  if (!url) throw new Error(`no PostgreSQL for this project: ${inject('postgresSkipReason')}`);
  return url;
}

/**
 * A real server over real HTTP on a real store: a SQLite file in a fresh temporary directory, or in
 * the `postgres` project a fresh PostgreSQL database (dropped on stop) with its own secret key.
 */
export async function startTestServer(
  options: {
    dataDir?: string;
    rateLimitPerMinute?: number;
    tcpPortRange?: { min: number; max: number };
    /** Deliver account events (off by default, so no test reaches for a real AWS or Datadog host). */
    eventDelivery?: EventDeliveryOptions;
    /** Obtain the edges' certificates by ACME (a local Pebble: test/support/pebble.ts). */
    acme?: AcmeSettings;
    /** The server's log (silent by default). */
    logger?: FastifyBaseLogger;
  } = {},
): Promise<TestServer> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'edgeward-test-'));
  const adminUrl = postgresAdminUrl();
  const database: TestDatabase | undefined = adminUrl ? await createTestDatabase(adminUrl) : undefined;
  // PostgreSQL needs the key from outside, as replicas share it; SQLite keeps it beside the file.
  const secretKey = database ? randomBytes(32).toString('base64') : undefined;
  const launch = (port: number) =>
    startServer({
      dataDir,
      databaseUrl: database?.url,
      secretKey,
      host: '127.0.0.1',
      port,
      adminApiKey: ADMIN_KEY,
      logger: options.logger ?? false,
      acme: options.acme,
      rateLimitPerMinute: options.rateLimitPerMinute,
      tcpPortRange: options.tcpPortRange,
      eventDelivery: options.eventDelivery,
      // Every response of every test is checked against the schema the OpenAPI document states.
      validateResponses: true,
    });
  const cleanUp = async () => {
    await database?.drop();
    if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
  };
  let server: RunningServer;
  try {
    server = await launch(0);
  } catch (error) {
    await cleanUp();
    throw error;
  }
  // One connection pool per server, replaced on restart so no request rides a connection the old server closed.
  let dispatcher = new Agent();
  const replicas: RunningServer[] = [];
  const port = Number(new URL(server.listenUrl).port);
  const handle: TestServer = {
    get baseUrl() {
      return server.listenUrl;
    },
    dataDir,
    store: database ? 'postgres' : 'sqlite',
    secretKey,
    get server() {
      return server;
    },
    async api<T>(method: string, path: string, body?: unknown, opts: RequestOptions = {}) {
      const headers: Record<string, string> = { ...opts.headers };
      const key = opts.key === undefined ? ADMIN_KEY : opts.key;
      if (key !== null) headers.authorization = `Bearer ${key}`;
      const version = opts.version === undefined ? '2' : opts.version;
      if (version !== null) headers['svc-version'] = version;
      let payload: string | undefined = opts.rawBody;
      if (body !== undefined) payload = JSON.stringify(body);
      if (payload !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
      const url = path.startsWith('http') ? path : `${server.listenUrl}${path}`;
      const response = await fetch(url, { method, headers, body: payload, dispatcher });
      const text = await response.text();
      return {
        status: response.status,
        headers: response.headers as unknown as Headers,
        body: (text ? JSON.parse(text) : undefined) as T,
        text,
      };
    },
    async restart() {
      await server.app.close();
      await dispatcher.close();
      dispatcher = new Agent();
      server = await launch(port);
    },
    async startReplica() {
      if (!database) throw new Error('replicas share a PostgreSQL database; this server runs on SQLite');
      const replica = await launch(0);
      replicas.push(replica);
      return replica;
    },
    async stop() {
      for (const replica of replicas.splice(0)) await replica.app.close();
      await server.app.close();
      await dispatcher.close();
      await cleanUp();
    },
  };
  return handle;
}

export const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
export const idPattern = (prefix: string) => new RegExp(`^${prefix}_[0-9A-Za-z]{27}$`);
