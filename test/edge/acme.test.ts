import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../../src/dev-cluster/free-port.js';
import { ACME_DEFAULTS, type ChallengeType } from '../../src/server/acme/acme-settings.js';
import { startTestEdge, type TestEdge } from '../support/edge.js';
import { waitFor } from '../support/eventually.js';
import { type Pebble, pebbleUnavailable, startPebble } from '../support/pebble.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { type ServerProcess, spawnServer } from '../support/server-process.js';
import { describeUnless } from '../support/skip-reason.js';

/**
 * Certificates by ACME with real parts: Pebble (Let's Encrypt's test CA) validating against the
 * test's edge on loopback, the server's certificate manager ordering and renewing, and
 * `openssl s_client -verify_return_error` and `curl --cacert` checking what the edge serves
 * against Pebble's root.
 */
const run = promisify(execFile);
const pebbleSkip = await pebbleUnavailable();
/** Short enough for a renewal inside a test (renewed at two thirds: about 16 s). */
const VALIDITY_S = 24;

interface TlsCertificateView {
  id: string;
  issued_at: string | null;
  serial_number: string;
  not_after: string;
  subject_alternative_names: { dns_names: string[] };
}

interface CertificateStatus {
  renews_at: string;
  provisioning_job: { error_code?: string; msg: string; started_at: string; retries_at: string } | null;
}

/** A server with ACME pointed at a fresh Pebble, and an edge where Pebble validates. */
class AcmeSetup {
  pebble!: Pebble;
  t!: TestServer;
  edge!: TestEdge;
  tlsPort = 0;
  httpPort = 0;
  scratch = mkdtempSync(join(tmpdir(), 'edgeward-acme-'));
  rootFile = join(this.scratch, 'pebble-root.pem');

  async start(challenges: ChallengeType[]): Promise<void> {
    this.tlsPort = await freePort();
    this.httpPort = await freePort();
    this.pebble = await startPebble({
      httpPort: this.httpPort,
      tlsPort: this.tlsPort,
      certificateValidity: VALIDITY_S,
      keyAlgorithm: 'ecdsa',
    });
    writeFileSync(this.rootFile, await this.pebble.rootPem());
    this.t = await startTestServer({
      acme: {
        ...ACME_DEFAULTS,
        directoryUrl: this.pebble.directoryUrl,
        email: 'certificates@example.com',
        caBundlePem: this.pebble.caBundlePem,
        challenges,
        retryMinMs: 500,
        pollMs: 2_000,
        pollMinMs: 200,
        pollMaxMs: 1_000,
        requestTimeoutMs: 5_000,
      },
      logger: pino({ level: process.env.EDGEWARD_TEST_LOG ?? 'silent' }),
    });
    this.edge = await startTestEdge(this.t, {
      tls: { host: '127.0.0.1', port: this.tlsPort },
      http: { host: '127.0.0.1', port: this.httpPort, httpsPort: this.tlsPort },
    });
  }

  async stop(): Promise<void> {
    await this.edge?.stop();
    await this.t?.stop();
    await this.pebble?.stop();
    rmSync(this.scratch, { recursive: true, force: true });
  }

  async httpsEdge(host: string): Promise<string> {
    const created = await this.t.api('POST', '/edges/https', { hostports: [`${host}:443`] });
    expect(created.status, created.text).toBe(201);
    return String(created.body.id);
  }

  /** The certificates the server manages for `host` (ACME-issued: `issued_at` set). */
  async managed(host: string): Promise<TlsCertificateView[]> {
    const listed = await this.t.api<{ tls_certificates: TlsCertificateView[] }>('GET', '/tls_certificates');
    return listed.body.tls_certificates.filter(
      (certificate) =>
        certificate.issued_at !== null && certificate.subject_alternative_names.dns_names.includes(host),
    );
  }

  /** Waits for a managed certificate of `host` other than those in `not`. */
  async issued(host: string, not: string[] = [], timeoutMs = 30_000): Promise<TlsCertificateView> {
    let found: TlsCertificateView | undefined;
    await waitFor(
      async () => {
        found = (await this.managed(host)).find((certificate) => !not.includes(certificate.id));
        return found !== undefined;
      },
      {
        what: `a certificate for ${host}`,
        timeoutMs,
        intervalMs: 250,
        detail: () => this.pebble.output().slice(-3000),
      },
    );
    return found as TlsCertificateView;
  }

  /** What the edge serves for `host`, verified by openssl against Pebble's root: the leaf's serial. */
  async servedSerial(host: string, address = '127.0.0.1'): Promise<string> {
    const { stdout } = await run('sh', [
      '-c',
      `openssl s_client -connect ${address}:${this.tlsPort} -servername ${host} -verify_return_error ` +
        `-verify_hostname ${host} -CAfile ${this.rootFile} </dev/null 2>/dev/null | openssl x509 -noout -serial`,
    ]);
    return normalSerial(stdout.replace(/^serial=/, ''));
  }

  /** An agent ingress asking for its certificate; returns its id. */
  async agentIngress(domain: string): Promise<string> {
    const created = await this.t.api('POST', '/agent_ingresses', {
      domain,
      certificate_management_policy: { private_key_type: 'ecdsa' },
    });
    expect(created.status, created.text).toBe(201);
    return String(created.body.id);
  }

  async certificateStatus(ingressId: string): Promise<CertificateStatus | null> {
    const read = await this.t.api<{ certificate_management_status: CertificateStatus | null }>(
      'GET',
      `/agent_ingresses/${ingressId}`,
    );
    return read.body.certificate_management_status;
  }

  async metric(line: RegExp): Promise<number> {
    const text = await (await fetch(`${this.t.baseUrl}/metrics`)).text();
    return Number(
      text
        .split('\n')
        .find((candidate) => line.test(candidate))
        ?.split(' ')
        .pop() ?? 0,
    );
  }
}

/** A serial as hex without leading zeros, lowercase, as both openssl and the API can be compared. */
function normalSerial(serial: string): string {
  return serial.trim().replace(/:/g, '').toLowerCase().replace(/^0+/, '');
}

describeUnless(pebbleSkip, 'ACME by TLS-ALPN-01: issued, served, renewed', () => {
  const setup = new AcmeSetup();
  beforeAll(() => setup.start(['tls-alpn-01']), 60_000);
  afterAll(() => setup.stop());
  const host = 'alpn.acme.test';

  it("issues the certificate of an HTTPS edge's name; openssl and curl verify it against the CA's root", async () => {
    await setup.httpsEdge(host);
    const certificate = await setup.issued(host);
    expect(certificate.serial_number).toMatch(/^[0-9a-f]+$/);
    expect(await setup.servedSerial(host)).toBe(normalSerial(certificate.serial_number));
    const curl = await run('curl', [
      '-sS',
      '-o',
      '/dev/null',
      '-w',
      '%{ssl_verify_result}',
      '--cacert',
      setup.rootFile,
      '--resolve',
      `${host}:${setup.tlsPort}:127.0.0.1`,
      `https://${host}:${setup.tlsPort}/`,
    ]);
    expect(curl.stdout).toBe('0');
    expect(await setup.metric(/^edgeward_acme_orders_total\{result="issued"/)).toBeGreaterThanOrEqual(1);
  });

  it('refuses to delete a certificate it manages (409), and lists it read-only with issued_at', async () => {
    const [certificate] = await setup.managed(host);
    expect(certificate?.issued_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    const deleted = await setup.t.api('DELETE', `/tls_certificates/${certificate?.id}`);
    expect(deleted.status, deleted.text).toBe(409);
    expect(deleted.text).toContain('managed by the server');
  });

  it("issues an agent ingress's certificate for its regional names; the tunnel endpoint serves it to agents dialing them", async () => {
    const id = await setup.agentIngress('ingress.acme.test');
    let status: CertificateStatus | null = null;
    await waitFor(
      async () => {
        status = await setup.certificateStatus(id);
        return status?.provisioning_job === null;
      },
      {
        what: 'the agent ingress certificate issued',
        timeoutMs: 30_000,
        intervalMs: 250,
        detail: () => JSON.stringify(status),
      },
    );
    const issued = await setup.issued('tunnel.us.ingress.acme.test');
    expect(issued.subject_alternative_names.dns_names).toContain('tunnel.eu.ingress.acme.test');
    // Renewal is set at about two thirds of the certificate's lifetime.
    const renewsAt = Date.parse((status as CertificateStatus | null)?.renews_at ?? '');
    expect(renewsAt).toBeGreaterThan(Date.now());
    expect(renewsAt).toBeLessThan(Date.parse(issued.not_after));
    // What an agent dialing the regional name sees: the issued certificate, verified by openssl.
    const { stdout } = await run('sh', [
      '-c',
      `openssl s_client -connect ${setup.edge.tunnelAddr} -servername tunnel.us.ingress.acme.test ` +
        '-alpn edgeward-tunnel/2 -verify_return_error -verify_hostname tunnel.us.ingress.acme.test ' +
        `-CAfile ${setup.rootFile} </dev/null 2>/dev/null | openssl x509 -noout -serial`,
    ]);
    expect(normalSerial(stdout.replace(/^serial=/, ''))).toBe(normalSerial(issued.serial_number));
  });

  it('every edge answers every challenge: names validated at two other edges, whichever the CA reaches', async () => {
    // Two more edges on other loopback addresses, at the port the CA validates: each name below
    // resolves to one of them only.
    const edges = await Promise.all(
      ['127.0.0.11', '127.0.0.12'].map((host) =>
        startTestEdge(setup.t, { tls: { host, port: setup.tlsPort } }),
      ),
    );
    try {
      await setup.pebble.pointHost('first.two-edges.acme.test', '127.0.0.11');
      await setup.pebble.pointHost('second.two-edges.acme.test', '127.0.0.12');
      for (const host of ['first.two-edges.acme.test', 'second.two-edges.acme.test'])
        await setup.httpsEdge(host);
      const first = await setup.issued('first.two-edges.acme.test');
      const second = await setup.issued('second.two-edges.acme.test');
      // And every edge serves both.
      for (const address of ['127.0.0.1', '127.0.0.11', '127.0.0.12']) {
        expect(await setup.servedSerial('first.two-edges.acme.test', address)).toBe(
          normalSerial(first.serial_number),
        );
        expect(await setup.servedSerial('second.two-edges.acme.test', address)).toBe(
          normalSerial(second.serial_number),
        );
      }
    } finally {
      await Promise.all(edges.map((edge) => edge.stop()));
    }
  });

  it('renews at about two thirds of the lifetime; the edge serves the new certificate without a restart', async () => {
    const [first] = await setup.managed(host);
    if (!first) throw new Error('no certificate to renew');
    const renewed = await setup.issued(host, [first.id], VALIDITY_S * 1000);
    // Renewed before the old one expired, and the old one is gone from the account.
    expect(Date.parse(renewed.not_after)).toBeGreaterThan(Date.parse(first.not_after));
    expect((await setup.managed(host)).map((certificate) => certificate.id)).toEqual([renewed.id]);
    await waitFor(async () => (await setup.servedSerial(host)) === normalSerial(renewed.serial_number), {
      what: 'the edge serving the renewed certificate',
      timeoutMs: 5_000,
    });
  });
});

describeUnless(pebbleSkip, 'ACME by HTTP-01: issued, and what a failure looks like', () => {
  const setup = new AcmeSetup();
  beforeAll(() => setup.start(['http-01']), 60_000);
  afterAll(() => setup.stop());

  it('issues by HTTP-01 on the plain-HTTP listener, which redirects everything else to HTTPS', async () => {
    const host = 'http01.acme.test';
    await setup.httpsEdge(host);
    const certificate = await setup.issued(host);
    expect(await setup.servedSerial(host)).toBe(normalSerial(certificate.serial_number));
    const redirect = await run('curl', [
      '-sS',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code} %{redirect_url}',
      '-H',
      `Host: ${host}`,
      `http://127.0.0.1:${setup.httpPort}/some/path?q=1`,
    ]);
    expect(redirect.stdout).toBe(`308 https://${host}:${setup.tlsPort}/some/path?q=1`);
    const unknown = await run('curl', [
      '-sS',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      `http://127.0.0.1:${setup.httpPort}/.well-known/acme-challenge/not-pending`,
    ]);
    expect(unknown.stdout).toBe('404');
  });

  it('a name whose DNS fails is a DNS_ERROR, retried with backoff, and issued once DNS is mended', async () => {
    const host = 'dns.acme.test';
    await setup.pebble.failDns(host);
    const failedBefore = await setup.metric(
      /^edgeward_acme_orders_total\{result="failed",error_code="DNS_ERROR"\}/,
    );
    await setup.httpsEdge(host);
    await waitFor(
      async () =>
        (await setup.metric(/^edgeward_acme_orders_total\{result="failed",error_code="DNS_ERROR"\}/)) >
        failedBefore,
      { what: 'a DNS_ERROR', timeoutMs: 20_000, intervalMs: 250 },
    );
    expect(await setup.managed(host)).toEqual([]);
    await setup.pebble.restoreDns(host);
    await setup.issued(host);
  });

  it("an agent ingress whose name does not resolve shows DNS_ERROR in its certificate status, with the CA's words", async () => {
    await setup.pebble.failDns('tunnel.eu.broken.acme.test');
    const id = await setup.agentIngress('broken.acme.test');
    let status: CertificateStatus | null = null;
    await waitFor(
      async () => {
        status = await setup.certificateStatus(id);
        return status?.provisioning_job?.error_code !== undefined;
      },
      {
        what: 'a failed certificate job',
        timeoutMs: 30_000,
        intervalMs: 250,
        detail: () => JSON.stringify(status),
      },
    );
    const job = (status as CertificateStatus | null)?.provisioning_job;
    expect(job?.error_code).toBe('DNS_ERROR');
    expect(job?.msg).toContain('tunnel.eu.broken.acme.test');
    expect(Date.parse(job?.retries_at ?? '')).toBeGreaterThan(Date.parse(job?.started_at ?? ''));
    await setup.pebble.restoreDns('tunnel.eu.broken.acme.test');
  });

  it('a CA that is down: the order fails as INTERNAL_ERROR, is retried, and succeeds once the CA is back', async () => {
    const host = 'down.acme.test';
    await setup.pebble.down();
    const failed = /^edgeward_acme_orders_total\{result="failed",error_code="INTERNAL_ERROR"\}/;
    const failedBefore = await setup.metric(failed);
    await setup.httpsEdge(host);
    await waitFor(async () => (await setup.metric(failed)) >= failedBefore + 2, {
      what: 'two failed tries while the CA is down',
      timeoutMs: 20_000,
      intervalMs: 250,
    });
    await setup.pebble.up();
    await setup.issued(host);
  });
});

describeUnless(pebbleSkip, 'a server killed in the middle of an order', () => {
  const ADMIN = 'ewk_acme_restart_admin_key_000000001';
  const host = 'restart.acme.test';
  let pebble: Pebble;
  let scratch: string;
  const ports = { http: 0, tls: 0 };
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'edgeward-acme-restart-'));
    ports.http = await freePort();
    ports.tls = await freePort();
    pebble = await startPebble({ httpPort: ports.http, tlsPort: ports.tls, keyAlgorithm: 'ecdsa' });
  }, 60_000);
  afterAll(async () => {
    for (const server of servers) await server.kill();
    await pebble?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  /** `edgeward server --edge` with ACME, on the data directory of the test: a real process. */
  async function server(): Promise<ServerProcess> {
    const bundle = join(scratch, 'pebble-minica.pem');
    writeFileSync(bundle, pebble.caBundlePem);
    const started = await spawnServer(
      [
        ...['--data-dir', join(scratch, 'data'), '--edge', '--edge-tunnel-addr', '127.0.0.1:0'],
        ...['--edge-ssh-addr', 'off', '--edge-tls-addr', `127.0.0.1:${ports.tls}`],
        ...['--edge-http-addr', `127.0.0.1:${ports.http}`, '--acme-directory-url', pebble.directoryUrl],
        ...['--acme-email', 'certificates@example.com', '--acme-ca-bundle', bundle],
        ...['--acme-challenges', 'http-01', '--acme-retry-min', '1'],
      ],
      { EDGEWARD_ADMIN_API_KEY: ADMIN },
    );
    servers.push(started);
    return started;
  }

  it('resumes the stored order after a SIGKILL: no second order, and the certificate is issued', async () => {
    const first = await server();
    const created = await fetch(`${first.listenUrl}/edges/https`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'svc-version': '2', 'content-type': 'application/json' },
      body: JSON.stringify({ hostports: [`${host}:443`] }),
    });
    expect(created.status).toBe(201);
    // Killed right after the order is stored, before the edges are asked to answer it.
    let orderUrl = '';
    await waitFor(
      () => {
        orderUrl = /new order (https:\/\/[^\s"]+)/.exec(first.stdout())?.[1] ?? '';
        return orderUrl !== '';
      },
      {
        what: 'the first order',
        timeoutMs: 20_000,
        intervalMs: 10,
        detail: () => first.stdout().slice(-3000),
      },
    );
    await first.kill('SIGKILL');
    expect(first.stdout()).not.toContain(`ACME certificates: issued ${host}`);

    const second = await server();
    await waitFor(() => second.stdout().includes(`ACME certificates: issued ${host}`), {
      what: 'the certificate issued after the restart',
      timeoutMs: 30_000,
      intervalMs: 100,
      detail: () => second.stdout().slice(-3000),
    });
    expect(second.stdout()).toContain(`resuming the order ${orderUrl}`);
    expect(second.stdout()).not.toContain('new order');
    const listed = await fetch(`${second.listenUrl}/tls_certificates`, {
      headers: { authorization: `Bearer ${ADMIN}`, 'svc-version': '2' },
    });
    expect(listed.status).toBe(200);
    const { tls_certificates: certificates } = (await listed.json()) as {
      tls_certificates: TlsCertificateView[];
    };
    expect(certificates.filter((certificate) => certificate.issued_at !== null)).toHaveLength(1);
  });
});
