/**
 * A loopback HTTP(S) proxy that lets a bench act at the moment an answer comes back: `onAnswer`
 * sees each upstream answer (method, path, status) before the client does, and may return 'drop'
 * (the client never gets it: its connection is cut) — e.g. after SIGKILLing the client, so the
 * kill lands exactly between the server's write and the client learning of it. Bodies stream
 * both ways, so Kubernetes watches pass through unchanged; a client that goes away takes its
 * upstream request with it.
 */
import http from 'node:http';
import https from 'node:https';

export class KillProxy {
  /** (answer: { method, path, status }) => 'drop' | undefined; unset: forward everything. */
  onAnswer = undefined;
  url = '';
  #server;
  #upstream;
  #upstreamTls;

  /**
   * `upstream`: base URL. `serverTls` ({ cert, key }): listen on HTTPS. `upstreamTls` ({ ca, cert,
   * key }): how to reach an HTTPS upstream (the client's own credentials stay with the proxy).
   */
  constructor({ upstream, serverTls, upstreamTls }) {
    this.#upstream = new URL(upstream);
    this.#upstreamTls = upstreamTls;
    const handler = (incoming, outgoing) => this.#handle(incoming, outgoing);
    this.#server = serverTls ? https.createServer(serverTls, handler) : http.createServer(handler);
  }

  async start() {
    await new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(0, '127.0.0.1', resolve);
    });
    const scheme = this.#server instanceof https.Server ? 'https' : 'http';
    this.url = `${scheme}://127.0.0.1:${this.#server.address().port}`;
    return this;
  }

  async stop() {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  #handle(incoming, outgoing) {
    const target = this.#upstream;
    const headers = { ...incoming.headers, host: target.host };
    const transport = target.protocol === 'https:' ? https : http;
    const upstream = transport.request({
      hostname: target.hostname,
      port: target.port,
      method: incoming.method,
      path: incoming.url,
      headers,
      ...(this.#upstreamTls ?? {}),
    });
    const path = (incoming.url ?? '/').split('?')[0];
    // The client went away (killed): so does its request upstream, watches included.
    outgoing.once('close', () => upstream.destroy());
    upstream.once('error', (error) => {
      if (outgoing.headersSent) outgoing.destroy();
      else if (!outgoing.destroyed) {
        outgoing.writeHead(502, { 'content-type': 'text/plain' });
        outgoing.end(`proxy: ${error.message}`);
      }
    });
    upstream.once('response', (answer) => {
      const verdict = this.onAnswer?.({ method: incoming.method, path, status: answer.statusCode });
      if (verdict === 'drop') {
        answer.resume();
        incoming.socket.destroy();
        return;
      }
      outgoing.writeHead(answer.statusCode, answer.headers);
      answer.pipe(outgoing);
    });
    incoming.pipe(upstream);
  }
}
