import { createServer, type Server } from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeNow, listenOnLoopback } from '../../../test/support/loopback-server.js';
import { type OpensslCertificate, OpensslWorkspace } from '../../../test/support/openssl.js';
import { KubeApi } from './kube-api.js';

const base64 = (pem: string) => Buffer.from(pem).toString('base64');

/** A kubeconfig for the loopback server, authenticating with `client`'s certificate and key. */
function kubeConfigFor(port: number, ca: OpensslCertificate, client: OpensslCertificate): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [
      { name: 'test', server: `https://localhost:${port}`, caData: base64(ca.pem), skipTLSVerify: false },
    ],
    users: [{ name: 'operator', certData: base64(client.pem), keyData: base64(client.key.pem) }],
    contexts: [{ name: 'test', cluster: 'test', user: 'operator' }],
    currentContext: 'test',
  });
  return kubeConfig;
}

describe('the operator’s Kubernetes connections', () => {
  const workspace = new OpensslWorkspace();
  let server: Server;
  let port = 0;
  let ca: OpensslCertificate;
  let firstClient: OpensslCertificate;
  let rotatedClient: OpensslCertificate;
  /** Client certificate subjects, one per TLS handshake the server completed. */
  const handshakes: string[] = [];

  beforeAll(async () => {
    const pair = workspace.caAndLeaf('localhost');
    ca = pair.ca;
    const clientCertificate = (name: string) =>
      workspace.certificate({
        subject: `/CN=${name}`,
        key: workspace.key('ec'),
        issuer: ca,
        extensions: ['basicConstraints = critical,CA:FALSE', 'extendedKeyUsage = clientAuth'],
      });
    firstClient = clientCertificate('operator-1');
    rotatedClient = clientCertificate('operator-2');
    server = createServer(
      {
        cert: pair.leaf.pem,
        key: pair.leaf.key.pem,
        ca: ca.pem,
        requestCert: true,
        rejectUnauthorized: true,
      },
      (request, response) => {
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify({ kind: 'Status', path: request.url }));
      },
    );
    server.on('secureConnection', (socket) => {
      handshakes.push(String(socket.getPeerCertificate().subject?.CN));
    });
    port = await listenOnLoopback(server);
  });

  afterAll(async () => {
    await closeNow(server);
    workspace.cleanup();
  });

  it('keep one TLS connection across calls, and present the client certificate on it', async () => {
    handshakes.length = 0;
    const api = new KubeApi(kubeConfigFor(port, ca, firstClient));
    try {
      for (let call = 0; call < 20; call++) {
        const body = await api.request<{ path: string }>('GET', `/api/v1/namespaces/n${call}`);
        expect(body.path).toBe(`/api/v1/namespaces/n${call}`);
      }
      expect(handshakes).toEqual(['operator-1']);
    } finally {
      api.close();
    }
  });

  it('make a new connection with the new certificate when the kubeconfig’s one is rotated', async () => {
    handshakes.length = 0;
    const kubeConfig = kubeConfigFor(port, ca, firstClient);
    const api = new KubeApi(kubeConfig);
    try {
      await api.request('GET', '/api/v1/namespaces/before');
      const user = kubeConfig.getCurrentUser();
      if (!user) throw new Error('the test kubeconfig has no user');
      Object.assign(user, { certData: base64(rotatedClient.pem), keyData: base64(rotatedClient.key.pem) });
      await api.request('GET', '/api/v1/namespaces/after');
      await api.request('GET', '/api/v1/namespaces/after-again');
      expect(handshakes).toEqual(['operator-1', 'operator-2']);
    } finally {
      api.close();
    }
  });
});
