import { Agent as HttpAgent, request } from 'undici';

/**
 * A GET through the HTTPS edge for `host`, served at `127.0.0.1:port`: its certificate verified
 * against `ca` (an ACME CA's root), or unchecked (the certificate the edge generated for the name).
 */
export async function getThroughHttpsEdge(host: string, port: number, path: string, ca?: string) {
  const dispatcher = new HttpAgent({
    connect: { servername: host, ...(ca === undefined ? { rejectUnauthorized: false } : { ca }) },
  });
  try {
    const deadline = Date.now() + 10_000;
    // Until the edge has the new configuration it does not know the name (a TLS alert) or the route.
    for (;;) {
      try {
        const response = await request(`https://127.0.0.1:${port}${path}`, {
          dispatcher,
          headers: { host: `${host}:${port}` },
        });
        const body = await response.body.text();
        if (response.statusCode !== 404 || Date.now() > deadline) {
          return { status: response.statusCode, headers: response.headers, body };
        }
      } catch (error) {
        if (Date.now() > deadline)
          throw new Error(`no answer through the HTTPS edge for ${host}`, { cause: error });
      }
      await new Promise((done) => setTimeout(done, 100));
    }
  } finally {
    await dispatcher.close();
  }
}
