import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, fetch } from 'undici';
import { type RunningServer, startServer } from '../../src/server/start.js';

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
  server: RunningServer;
  /** Raw HTTP against the server: assertions look at the wire, not at our client. */
  api<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    options?: RequestOptions,
  ): Promise<ApiResponse<T>>;
  /** Stops and starts again on the same data directory and port. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** A real server over real HTTP on a real SQLite file in a fresh temporary directory. */
export async function startTestServer(
  options: { dataDir?: string; rateLimitPerMinute?: number } = {},
): Promise<TestServer> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'edgeward-test-'));
  const launch = (port: number) =>
    startServer({
      dataDir,
      host: '127.0.0.1',
      port,
      adminApiKey: ADMIN_KEY,
      logger: false,
      rateLimitPerMinute: options.rateLimitPerMinute,
    });
  let server = await launch(0);
  // One connection pool per server, replaced on restart so no request rides a connection the old server closed.
  let dispatcher = new Agent();
  const port = Number(new URL(server.listenUrl).port);
  const handle: TestServer = {
    get baseUrl() {
      return server.listenUrl;
    },
    dataDir,
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
    async stop() {
      await server.app.close();
      await dispatcher.close();
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return handle;
}

export const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
export const idPattern = (prefix: string) => new RegExp(`^${prefix}_[0-9A-Za-z]{27}$`);
