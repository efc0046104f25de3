import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../src/dev-cluster/free-port.js';
import { adminApi } from '../support/admin-api.js';
import { agentArgs, type CliProcess, spawnCli } from '../support/cli-process.js';
import { waitFor } from '../support/eventually.js';
import { curlHttps } from '../support/https-curl.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres-database.js';
import { projectStore } from '../support/server.js';

/**
 * Two `edgeward server` replicas as separate processes on one PostgreSQL database, and an edge
 * whose `--api-url` names both: SIGKILL of the replica holding the edge's feed costs the data plane
 * nothing (the edge keeps its last configuration and serves on), the feed moves to the survivor,
 * and a change made through the survivor reaches the edge within 2 s.
 */
const ADMIN_KEY = 'ewk_server_replicas_admin_key_0123456789ab';
const HOST = 'replicas.example.test';

const processes: CliProcess[] = [];
let database: TestDatabase | undefined;
let dataDir: string;
let service: HttpServer;
let replicas: Array<{ process: CliProcess; url: string }> = [];
let edge: CliProcess;
let tlsPort: number;

function api(apiUrl: string, method: string, path: string, body?: unknown) {
  return adminApi(() => apiUrl, ADMIN_KEY)(method, path, body);
}

describe('an edge fed by two server replicas on PostgreSQL', () => {
  beforeEach((context) => {
    context.skip(projectStore() === 'sqlite', 'replicas share a PostgreSQL database (the postgres project)');
  });

  beforeAll(async () => {
    if (projectStore() === 'sqlite') return;
    database = await createTestDatabase(inject('postgresUrl') as string);
    dataDir = mkdtempSync(join(tmpdir(), 'edgeward-replicas-'));
    const env = {
      EDGEWARD_ADMIN_API_KEY: ADMIN_KEY,
      EDGEWARD_SECRET_KEY: randomBytes(32).toString('base64'),
    };
    for (const name of ['a', 'b']) {
      const replica = spawnCli(
        ['server', '--database-url', database.url, '--data-dir', join(dataDir, name), '--port', '0'],
        env,
      );
      processes.push(replica);
      const ready = await replica.logLine((line) => line.msg === 'edgeward server ready', 60_000);
      replicas.push({ process: replica, url: String(ready.listen) });
    }
    const printed = spawnCli(['server', '--database-url', database.url, '--print-edge-key'], env);
    await once(printed.child, 'exit');
    const edgeKey = printed.output().trim();

    service = createHttpServer((_request, response) => response.end('served'));
    service.listen(0, '127.0.0.1');
    await once(service, 'listening');
    tlsPort = await freePort();
    edge = spawnCli(
      [
        'edge',
        '--api-url',
        replicas.map((replica) => replica.url).join(','),
        '--data-dir',
        join(dataDir, 'edge'),
        '--tunnel-addr',
        '127.0.0.1:0',
        '--tls-addr',
        `127.0.0.1:${tlsPort}`,
        '--ssh-addr',
        'off',
        '--relay-addr',
        'off',
        '--metrics-addr',
        'off',
        '--tcp-port-range',
        '1-9',
      ],
      { EDGEWARD_EDGE_KEY: edgeKey },
    );
    processes.push(edge);
    const edgeReady = await edge.logLine((line) => line.msg === 'edgeward edge ready', 60_000);

    const first = replicas[0]?.url as string;
    const credential = await api(first, 'POST', '/credentials', {});
    const backend = await api(first, 'POST', '/backends/tunnel_group', { labels: { app: 'replicas' } });
    const httpsEdge = await api(first, 'POST', '/edges/https', { hostports: [`${HOST}:443`] });
    await api(first, 'POST', `/edges/https/${httpsEdge.id}/routes`, {
      match_type: 'path_prefix',
      match: '/',
      backend: { backend_id: backend.id },
    });
    const agent = spawnCli(
      agentArgs({
        edgeAddr: `127.0.0.1:${edgeReady.tunnelPort}`,
        edgeCa: join(dataDir, 'edge', 'tunnel.crt'),
        label: 'app=replicas',
        forward: `http://127.0.0.1:${(service.address() as AddressInfo).port}`,
        extra: ['--no-exec-restart'],
      }),
      { EDGEWARD_AUTHTOKEN: String(credential.token) },
    );
    processes.push(agent);
    await agent.logLine((line) => line.msg === 'session opened', 30_000);
  }, 180_000);

  afterAll(async () => {
    for (const child of processes.reverse()) await child.kill('SIGKILL');
    service?.close();
    await database?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    replicas = [];
  });

  it('SIGKILL of the replica holding the feed: traffic goes on, and changes reach the edge through the survivor', async () => {
    const before = await curlHttps(HOST, tlsPort, '/');
    expect(before.status, before.stderr).toBe(200);
    // The edge holds its feed on the first URL it was given.
    const [dead, survivor] = replicas as [
      { process: CliProcess; url: string },
      { process: CliProcess; url: string },
    ];
    await dead.process.kill('SIGKILL');
    const failures: string[] = [];
    for (let attempt = 0; attempt < 10; attempt++) {
      const result = await curlHttps(HOST, tlsPort, '/');
      if (result.status !== 200) failures.push(`${result.code} ${result.status} ${result.stderr}`);
    }
    expect(failures).toEqual([]);
    // The feed moved to the survivor: the edge logs it open a second time.
    await waitFor(() => edge.output().split('"msg":"configuration feed open"').length - 1 >= 2, {
      what: 'the feed open again on the surviving replica',
      timeoutMs: 20_000,
      intervalMs: 100,
      detail: () => edge.output().slice(-2000),
    });

    // A new host, written through the survivor, is served by the edge within 2 s.
    const newHost = `new.${HOST}`;
    const backend = await api(survivor.url, 'POST', '/backends/tunnel_group', {
      labels: { app: 'replicas' },
    });
    const httpsEdge = await api(survivor.url, 'POST', '/edges/https', { hostports: [`${newHost}:443`] });
    const writtenAt = Date.now();
    await api(survivor.url, 'POST', `/edges/https/${httpsEdge.id}/routes`, {
      match_type: 'path_prefix',
      match: '/',
      backend: { backend_id: backend.id },
    });
    await waitFor(
      async () => {
        const result = await curlHttps(newHost, tlsPort, '/', ['--max-time', '2']);
        return result.status === 200 && result.body === 'served';
      },
      { what: 'the new host served', timeoutMs: 10_000, intervalMs: 50 },
    );
    const tookMs = Date.now() - writtenAt;
    console.info(`[replicas] a change through the surviving replica served by the edge after ${tookMs} ms`);
    expect(tookMs).toBeLessThan(2000);
  }, 60_000);
});
