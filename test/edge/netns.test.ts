import { execFile, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { agentArgs } from '../support/cli-process.js';
import { startTestEdge, type TestEdge } from '../support/edge.js';
import { eventually } from '../support/eventually.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { describeUnless } from '../support/skip-reason.js';

/**
 * The data plane across network namespaces this test creates (`ip netns` + veth), so addresses are
 * real and distinct: the agent dials the edge from 10.X.2.2, the public client comes from 10.X.1.2,
 * and the server and edge sit in the test's own namespace on 10.X.1.1 / 10.X.2.1. Nothing is
 * routed beyond these links. Needs root (CAP_NET_ADMIN); skipped with the reason otherwise.
 */
const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const TAG = `ew${process.pid % 10000}`;
const OCTET = 100 + (process.pid % 100);
const CLIENT_NS = `${TAG}c`;
const AGENT_NS = `${TAG}a`;
const EDGE_SIDE = { client: `10.${OCTET}.1.1`, agent: `10.${OCTET}.2.1` };
const CLIENT_IP = `10.${OCTET}.1.2`;
const AGENT_IP = `10.${OCTET}.2.2`;

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: 'pipe' });
}

function namespacesUnavailable(): string | undefined {
  try {
    ip('netns', 'add', `${TAG}probe`);
    ip('netns', 'del', `${TAG}probe`);
    return undefined;
  } catch (error) {
    return `network namespaces are not available here (${(error as Error).message.split('\n')[0]})`;
  }
}

const skipReason = namespacesUnavailable();

function link(namespace: string, hostSide: string, inside: string, hostIp: string, insideIp: string): void {
  ip('netns', 'add', namespace);
  ip('link', 'add', hostSide, 'type', 'veth', 'peer', 'name', inside);
  ip('link', 'set', inside, 'netns', namespace);
  ip('addr', 'add', `${hostIp}/24`, 'dev', hostSide);
  ip('link', 'set', hostSide, 'up');
  ip('netns', 'exec', namespace, 'ip', 'addr', 'add', `${insideIp}/24`, 'dev', inside);
  ip('netns', 'exec', namespace, 'ip', 'link', 'set', inside, 'up');
  ip('netns', 'exec', namespace, 'ip', 'link', 'set', 'lo', 'up');
}

function unlink(namespace: string, hostSide: string): void {
  for (const args of [
    ['link', 'del', hostSide],
    ['netns', 'del', namespace],
  ]) {
    try {
      ip(...args);
    } catch {
      // already gone (a failed setup)
    }
  }
}

let t: TestServer;
let edge: TestEdge;
let workDir: string;

describeUnless(skipReason, 'across network namespaces', () => {
  beforeAll(async () => {
    link(CLIENT_NS, `${TAG}ch`, `${TAG}ci`, EDGE_SIDE.client, CLIENT_IP);
    link(AGENT_NS, `${TAG}ah`, `${TAG}ai`, EDGE_SIDE.agent, AGENT_IP);
    workDir = mkdtempSync(join(tmpdir(), 'edgeward-netns-'));
    t = await startTestServer();
    edge = await startTestEdge(t, { tunnelHost: EDGE_SIDE.agent, tcpHost: EDGE_SIDE.client });
  });

  afterAll(async () => {
    await edge?.stop();
    await t?.stop();
    unlink(CLIENT_NS, `${TAG}ch`);
    unlink(AGENT_NS, `${TAG}ah`);
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  async function api(method: string, path: string, body?: unknown) {
    const response = await t.api(method, path, body);
    expect(response.status, `${method} ${path}: ${response.text}`).toBeLessThan(300);
    return response.body;
  }

  /** curl in the client's namespace; asynchronous, since the edge runs in this process. */
  async function curlFromClient(port: number): Promise<{ code: number; stdout: string }> {
    try {
      const { stdout } = await run('ip', [
        'netns',
        'exec',
        CLIENT_NS,
        'curl',
        '-sS',
        '--max-time',
        '3',
        `http://${EDGE_SIDE.client}:${port}/`,
      ]);
      return { code: 0, stdout };
    } catch (error) {
      return { code: (error as { code?: number }).code ?? -1, stdout: '' };
    }
  }

  it('sees the agent’s and the client’s real addresses, and an IP policy decides by the client’s', async () => {
    // The service runs in the agent's namespace, reachable only from there.
    const serviceScript = join(workDir, 'service.mjs');
    writeFileSync(
      serviceScript,
      "import http from 'node:http'; http.createServer((q, s) => s.end('served in the agent namespace')).listen(8080, '127.0.0.1', () => console.log('ready'));",
    );
    const service = spawn('ip', ['netns', 'exec', AGENT_NS, process.execPath, serviceScript], {
      stdio: 'pipe',
    });
    try {
      await once(service.stdout, 'data');
      const credential = await api('POST', '/credentials', {});
      const backend = await api('POST', '/backends/tunnel_group', { labels: { app: 'netns' } });
      const addr = await api('POST', '/reserved_addrs', {});
      const tcpEdge = await api('POST', '/edges/tcp', {
        hostports: [addr.addr],
        backend: { backend_id: backend.id },
      });
      const port = Number(String(addr.addr).split(':').pop());
      writeFileSync(join(workDir, 'tunnel-ca.pem'), edge.tunnelCa);

      const agent = spawn(
        'ip',
        [
          'netns',
          'exec',
          AGENT_NS,
          process.execPath,
          '--import',
          'tsx',
          CLI,
          ...agentArgs({
            edgeAddr: edge.tunnelAddr,
            edgeCa: join(workDir, 'tunnel-ca.pem'),
            label: 'app=netns',
            forward: 'http://127.0.0.1:8080',
          }),
        ],
        {
          env: { ...process.env, EDGEWARD_AUTHTOKEN: String(credential.token), LOG_LEVEL: 'debug' },
          stdio: 'pipe',
        },
      );
      let agentLog = '';
      agent.stdout.on('data', (chunk: Buffer) => {
        agentLog += chunk.toString();
      });
      agent.stderr.on('data', (chunk: Buffer) => {
        agentLog += chunk.toString();
      });
      try {
        const sessions = await eventually(
          async () =>
            (await api('GET', '/tunnel_sessions')).tunnel_sessions as Array<Record<string, unknown>>,
          (listed) => listed.length > 0,
          20_000,
        );
        expect(sessions, agentLog).toHaveLength(1);
        expect(sessions[0]?.ip).toBe(AGENT_IP);

        expect(await curlFromClient(port), agentLog).toEqual({
          code: 0,
          stdout: 'served in the agent namespace',
        });
        // The agent was told who the public client is.
        expect(agentLog).toContain(`"ip":"${CLIENT_IP}"`);

        // A policy allowing only another address refuses this client; allowing its /32 lets it in.
        const policy = await api('POST', '/ip_policies', {});
        const other = await api('POST', '/ip_policy_rules', {
          ip_policy_id: policy.id,
          cidr: `10.${OCTET}.9.0/24`,
          action: 'allow',
        });
        await api('PATCH', `/edges/tcp/${tcpEdge.id}`, { ip_restriction: { ip_policy_ids: [policy.id] } });
        // The edge learns of the change from its feed: the client is refused once it has.
        expect(
          (
            await eventually(
              () => curlFromClient(port),
              (result) => result.code !== 0,
            )
          ).code,
        ).not.toBe(0);
        await api('POST', '/ip_policy_rules', {
          ip_policy_id: policy.id,
          cidr: `${CLIENT_IP}/32`,
          action: 'allow',
        });
        await api('DELETE', `/ip_policy_rules/${other.id}`);
        expect(
          await eventually(
            () => curlFromClient(port),
            (result) => result.code === 0,
          ),
        ).toEqual({
          code: 0,
          stdout: 'served in the agent namespace',
        });
      } finally {
        agent.kill('SIGKILL');
      }
    } finally {
      service.kill('SIGKILL');
    }
  }, 60_000);
});
