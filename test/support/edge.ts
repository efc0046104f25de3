import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Agent } from '../../src/agent/agent.js';
import { parseForwardTarget } from '../../src/agent/forward-target.js';
import { Edge, type EdgeOptions } from '../../src/edge/edge.js';
import { loadSshHostKey } from '../../src/edge/ssh-host-key.js';
import type { AgentSession } from '../../src/edge/tunnel/agent-session.js';
import type { TunnelEndpoint } from '../../src/edge/tunnel/tunnel-endpoint.js';
import { loadTunnelCertificate } from '../../src/edge/tunnel-certificate.js';
import type { TestServer } from './server.js';

export interface TestEdge {
  edge: Edge;
  /** PEM agents trust for the tunnel endpoint. */
  tunnelCa: string;
  tunnelAddr: string;
  stop(): Promise<void>;
}

/** A real `Edge` on loopback, fed by the test server's edge feed, with a generated tunnel certificate. */
export async function startTestEdge(
  t: TestServer,
  options: Partial<
    Pick<
      EdgeOptions,
      | 'region'
      | 'tcpHost'
      | 'tcpPortRange'
      | 'edgeId'
      | 'drainTimeoutMs'
      | 'identityProviderCas'
      | 'httpsClientLimits'
      | 'unauthenticatedLimits'
      | 'sessionLiveness'
      | 'logger'
      | 'http'
    >
  > & {
    tunnelHost?: string;
    /** Open the public TLS listener of TLS edges on 127.0.0.1 (a free port), or on the address given. */
    tls?: boolean | { host: string; port: number };
    /** Open the SSH endpoint on 127.0.0.1 (a free port), with a host key generated in the data directory. */
    ssh?: boolean;
  } = {},
): Promise<TestEdge> {
  const { tunnelHost = '127.0.0.1', tls: withTls = false, ssh: withSsh = false, ...edgeOptions } = options;
  const dataDir = mkdtempSync(join(tmpdir(), 'edgeward-edge-'));
  const tls = await loadTunnelCertificate({ dataDir, names: ['localhost', '127.0.0.1'] });
  const edge = new Edge({
    apiUrl: t.baseUrl,
    edgeKey: t.server.edgeKey,
    region: 'us',
    tunnel: { host: tunnelHost, port: 0, tls },
    ...(withTls ? { tls: withTls === true ? { host: '127.0.0.1', port: 0 } : withTls } : {}),
    ...(withSsh ? { ssh: { host: '127.0.0.1', port: 0, hostKeys: [loadSshHostKey({ dataDir })] } } : {}),
    tcpHost: '127.0.0.1',
    tcpPortRange: { min: 1024, max: 65535 },
    logger: pino({ level: process.env.EDGEWARD_TEST_LOG ?? 'silent' }),
    drainTimeoutMs: 1000,
    ...edgeOptions,
  });
  await edge.start();
  return {
    edge,
    tunnelCa: tls.cert,
    tunnelAddr: `${tunnelHost}:${edge.tunnelPort}`,
    async stop() {
      await edge.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Our agent, dialing a test edge. */
export function startTestAgent(
  edge: TestEdge,
  options: {
    authtoken: string;
    labels: Record<string, string>;
    forward: string;
    metadata?: string;
    /** How many edges to hold a session on (the agent's default: up to 4 of the live ones). */
    haConnections?: number;
  },
): Agent {
  const agent = new Agent({
    edgeAddr: edge.tunnelAddr,
    authtoken: options.authtoken,
    labels: options.labels,
    forward: parseForwardTarget(options.forward),
    agentVersion: '0.1.0',
    ca: edge.tunnelCa,
    serverName: 'localhost',
    ...(options.metadata === undefined ? {} : { metadata: options.metadata }),
    ...(options.haConnections === undefined ? {} : { haConnections: options.haConnections }),
  });
  agent.start();
  return agent;
}

/** The endpoint's session that `agent` opens next. */
export async function nextSessionOn(endpoint: TunnelEndpoint, agent: Agent): Promise<AgentSession> {
  const [id] = (await once(agent, 'session')) as [string];
  const session = endpoint.session(id);
  if (!session) throw new Error(`session ${id} is not on the endpoint`);
  return session;
}
