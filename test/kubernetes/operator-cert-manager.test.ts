import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type CertManager, startCertManager } from '../support/cert-manager.js';
import { startTestEdge, type TestEdge } from '../support/edge.js';
import { type Cr, condition, OperatorHarness, secretValue } from '../support/operator-harness.js';
import { serialOf, servedSerialIfAny, uploadedFor } from '../support/served-certificate.js';

/**
 * cert-manager's own controllers (v1.21, built from its Go module, run out of cluster against the
 * test control plane) issue and renew certificates that flow to the edge through the operator: a
 * self-signed root Certificate, a CA Issuer on it, and a short-lived Certificate whose renewBefore
 * is nearly its whole duration (1 h, the least cert-manager's webhook allows, renewed 10 s after
 * each issuance). A TLSCertificate with `secretRef` follows its Secret; an in-process edge fed by
 * the test server serves it, and `openssl s_client`, verifying against the root, sees each new
 * serial without anything restarted. An Ingress of the class edgeward with cert-manager's
 * annotations gets its certificate the way clusters usually do it (cert-manager's ingress-shim
 * makes the Certificate of `spec.tls`), and serves it too.
 */

const h = new OperatorHarness('cert-manager');
const { apply, yamlOf, getCr, getSecret, eventually, kubectl, namespace, suffix } = h;
let edge: TestEdge | undefined;
let certManager: CertManager | undefined;
let scratch: string;
let rootFile: string;

/** Renewed 10 s after each issuance: cert-manager's own schedule, nothing triggered by hand. */
const DURATION = '1h';
const RENEW_BEFORE = '59m50s';

const certManagerObject = (kind: string, name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'cert-manager.io/v1',
  kind,
  metadata: { name, namespace },
  spec,
});

/** A Certificate of the CA Issuer for `host`, in the Secret `secretName`. */
const webCertificate = (name: string, host: string, renewBefore = RENEW_BEFORE) =>
  certManagerObject('Certificate', name, {
    secretName: name,
    dnsNames: [host],
    duration: DURATION,
    renewBefore,
    privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' },
    issuerRef: { name: 'ca', kind: 'Issuer' },
  });

const applyObjects = (...items: unknown[]) =>
  kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));

/** The serial of the certificate a Secret holds now (undefined while it has none). */
async function secretSerial(name: string): Promise<string | undefined> {
  const secret = await getSecret(name);
  const pem = secret ? secretValue(secret, 'tls.crt') : '';
  return pem ? serialOf(pem) : undefined;
}

const served = (host: string) => servedSerialIfAny(edge?.edge.tlsPort ?? 0, host, rootFile);

/**
 * Waits until the edge serves, verified against the root, the certificate the Secret holds at that
 * moment, one other than `not`; returns its serial.
 */
const servingSecret = (host: string, secretName: string, not: string[] = []) =>
  eventually(
    `the edge to serve ${host} the certificate of Secret ${secretName}${not.length > 0 ? `, not ${not.join(', ')}` : ''}`,
    async () => {
      const inSecret = await secretSerial(secretName);
      if (!inSecret || not.includes(inSecret)) return undefined;
      return (await served(host)) === inSecret ? inSecret : undefined;
    },
    60_000,
  );

async function httpsEdge(host: string): Promise<void> {
  const created = await h.t.api('POST', '/edges/https', { hostports: [`${host}:443`] });
  expect(created.status, created.text).toBe(201);
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'edgeward-cert-manager-'));
  await h.start({
    operatorArgs: async (server) => {
      edge = await startTestEdge(server, { tls: true });
      return [];
    },
  });
  certManager = await startCertManager({ kubeconfig: inject('kubeconfig'), namespace });
  // The root: a self-signed CA Certificate, and a CA Issuer signing with it.
  await applyObjects(
    certManagerObject('Issuer', 'selfsigned', { selfSigned: {} }),
    certManagerObject('Certificate', 'root', {
      isCA: true,
      commonName: `edgeward test root ${suffix}`,
      secretName: 'root',
      duration: '24h',
      privateKey: { algorithm: 'ECDSA', size: 256 },
      issuerRef: { name: 'selfsigned', kind: 'Issuer' },
    }),
    certManagerObject('Issuer', 'ca', { ca: { secretName: 'root' } }),
  );
  const root = await eventually('the root CA Secret', async () => {
    const secret = await getSecret('root');
    return secret && secretValue(secret, 'tls.crt') ? secretValue(secret, 'tls.crt') : undefined;
  });
  rootFile = join(scratch, 'root.pem');
  writeFileSync(rootFile, root);
});

afterAll(async () => {
  await certManager?.stop();
  await edge?.stop();
  await h.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('cert-manager issuing and renewing, the edge serving each certificate', () => {
  it('a TLSCertificate with secretRef follows cert-manager’s renewals to the edge, one certificate on the server at a time', async () => {
    const host = `web-${suffix}.example.com`;
    await httpsEdge(host);
    const started = performance.now();
    await applyObjects(webCertificate('web-tls', host));
    await apply(yamlOf('TLSCertificate', 'web', { secretRef: { name: 'web-tls' } }));
    const first = await servingSecret(host, 'web-tls');
    const issuedIn = performance.now() - started;
    // cert-manager renews on its own; the operator replaces the certificate on the server.
    const renewed = await servingSecret(host, 'web-tls', [first]);
    const renewedIn = performance.now() - started - issuedIn;

    // Freeze: renewal at half the lifetime from now on, so the state can settle and be compared.
    await applyObjects(webCertificate('web-tls', host, '30m'));
    const settled = await eventually(
      'the Secret, the CR, the server and the edge to agree on one certificate',
      async () => {
        const inSecret = await secretSerial('web-tls');
        const cr = await getCr('tlscertificates', 'web');
        const uploaded = await uploadedFor(h.t, host);
        const agree =
          inSecret !== undefined &&
          condition(cr, 'Ready')?.status === 'True' &&
          String(cr?.status?.serialNumber).replace(/^0+/, '') === inSecret &&
          uploaded.length === 1 &&
          uploaded[0]?.id === cr?.status?.id &&
          (await served(host)) === inSecret;
        return agree ? { inSecret, cr: cr as Cr } : undefined;
      },
      60_000,
    );
    expect([first, renewed]).not.toContain(undefined);
    expect(condition(settled.cr, 'Ready')?.reason).toBe('Replaced');
    console.info(
      `cert-manager: first certificate served ${(issuedIn / 1000).toFixed(1)} s after the Certificate was applied; ` +
        `its renewal (cert-manager's schedule: 10 s after issuance) served ${(renewedIn / 1000).toFixed(1)} s later`,
    );
  });

  it('an Ingress with cert-manager’s annotations: the ingress-shim’s Certificate of spec.tls is served, and renewed', async () => {
    const host = `shop-${suffix}.example.com`;
    await applyObjects({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: {
        name: 'shop',
        namespace,
        annotations: {
          'cert-manager.io/issuer': 'ca',
          'cert-manager.io/duration': DURATION,
          'cert-manager.io/renew-before': RENEW_BEFORE,
          'cert-manager.io/private-key-algorithm': 'ECDSA',
        },
      },
      spec: {
        ingressClassName: 'edgeward',
        tls: [{ hosts: [host], secretName: 'shop-tls' }],
        rules: [
          {
            host,
            http: {
              paths: [
                {
                  path: '/',
                  pathType: 'Prefix',
                  backend: { service: { name: 'web', port: { number: 80 } } },
                },
              ],
            },
          },
        ],
      },
    });
    const first = await servingSecret(host, 'shop-tls');
    await servingSecret(host, 'shop-tls', [first]);
    // The certificate came through the TLSCertificate the Ingress owns.
    const { stdout } = await kubectl([
      'get',
      '-n',
      namespace,
      'tlscertificates.edgeward.dev',
      '-l',
      'edgeward.dev/ingress=shop',
      '-o',
      'jsonpath={.items[*].spec.secretRef.name}',
    ]);
    expect(stdout).toBe('shop-tls');
  });
});
