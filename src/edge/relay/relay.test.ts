import { EventEmitter } from 'node:events';
import { type AddressInfo, connect, createServer, type Server } from 'node:net';
import type { Duplex } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TunnelSession, TunnelSessionInfo } from '../routing/tunnel-session.js';
import { RelayClient, RelayRefused } from './relay-client.js';
import { RelayEndpoint } from './relay-endpoint.js';

const EDGE_KEY = 'edge-key-for-relay-tests-0123456789abcdef';

/** A session whose streams are TCP connections to `port` (what an agent's stream carries to). */
function sessionTo(port: number, id: string): TunnelSession {
  const emitter = new EventEmitter<{ closed: [string] }>();
  const info: TunnelSessionInfo = {
    id,
    credentialId: 'cr_test',
    transport: 'svc/2',
    agentVersion: '0.1.0',
    os: 'linux',
    metadata: undefined,
    labels: { app: 'relay' },
    ip: '127.0.0.1',
    startedAt: new Date(),
  };
  return Object.assign(emitter, {
    info,
    closed: false,
    draining: false,
    inRotation: true,
    markSuspect: () => {},
    drain: () => false,
    tellEdges: () => {},
    openStream: (_source: { ip: string; port: number }): Promise<Duplex> =>
      new Promise((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => resolve(socket));
        socket.once('error', reject);
      }),
    command: async () => {},
    close: () => {},
  }) as unknown as TunnelSession;
}

let echo: Server;
let endpoint: RelayEndpoint;
let relayAddr: string;
const sources: Array<{ ip: string; port: number }> = [];

beforeAll(async () => {
  echo = createServer((socket) => socket.pipe(socket));
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  const session = sessionTo((echo.address() as AddressInfo).port, 'ts_held');
  const open = session.openStream.bind(session);
  session.openStream = (source) => {
    sources.push(source);
    return open(source);
  };
  endpoint = new RelayEndpoint({
    edgeKey: EDGE_KEY,
    localSession: (id) => (id === 'ts_held' ? session : undefined),
  });
  relayAddr = `127.0.0.1:${(await endpoint.listen(0, '127.0.0.1')).port}`;
});

afterAll(async () => {
  await endpoint.close();
  echo.close();
});

describe('edge relay', () => {
  it('carries a connection to a session the other edge holds, both ways, with the public source', async () => {
    const client = new RelayClient(EDGE_KEY);
    const stream = await client.open(relayAddr, 'ts_held', { ip: '203.0.113.9', port: 40001 });
    const echoed = new Promise<string>((resolve) =>
      stream.once('data', (chunk: Buffer) => resolve(chunk.toString())),
    );
    stream.write('hello through the relay');
    expect(await echoed).toBe('hello through the relay');
    expect(sources.at(-1)).toEqual({ ip: '203.0.113.9', port: 40001 });
    stream.destroy();
    client.close();
  });

  it('answers 404 for a session it does not hold: the caller tries elsewhere', async () => {
    const client = new RelayClient(EDGE_KEY);
    const refused = await client
      .open(relayAddr, 'ts_elsewhere', { ip: '203.0.113.9', port: 1 })
      .catch((e) => e);
    expect(refused).toBeInstanceOf(RelayRefused);
    expect((refused as RelayRefused).status).toBe(404);
    client.close();
  });

  it('refuses a caller without the edge key: the TLS handshake fails', async () => {
    const client = new RelayClient('another-edge-key-entirely-0123456789');
    const failed = await client.open(relayAddr, 'ts_held', { ip: '203.0.113.9', port: 1 }).catch((e) => e);
    expect(failed).toBeInstanceOf(Error);
    expect(failed).not.toBeInstanceOf(RelayRefused);
    expect(sources.length).toBe(1);
    client.close();
  });
});
