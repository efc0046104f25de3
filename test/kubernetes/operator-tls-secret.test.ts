import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GeneratedCertificate, issueCertificate } from '../../src/crypto/x509.js';
import { AnswerDroppingProxy } from '../support/answer-dropping-proxy.js';
import { startTestEdge, type TestEdge } from '../support/edge.js';
import { type Cr, condition, OperatorHarness } from '../support/operator-harness.js';
import { serialOf, servedSerial, servedSerialIfAny, uploadedFor } from '../support/served-certificate.js';
import type { TestServer } from '../support/server.js';

/**
 * Certificates from `kubernetes.io/tls` Secrets, end to end: a real server, an in-process edge with
 * its TLS listener fed by it, and `edgeward operator` (a process) talking to the server through a
 * proxy that can lose an answer. A TLSCertificate with `secretRef` uploads the Secret's chain; a
 * new certificate in the Secret (a renewal) replaces it on the server, and `openssl s_client`
 * verifies the new one at the edge while the old id is gone; a Secret that goes bad or away keeps
 * the certificate in force and says so. A crash between the upload and the delete of a replacement
 * (the answer lost, the operator SIGKILLed) leaves one certificate after the restart. An Ingress's
 * `spec.tls` takes the same path, and its status carries `--ingress-status-address`.
 */

const STATUS_ADDRESS = '203.0.113.7';
const h = new OperatorHarness('tls-secret');
const { apply, yamlOf, getCr, eventually, waitFor, kubectl, namespace, suffix } = h;
let t: TestServer;
let edge: TestEdge | undefined;
let proxy: AnswerDroppingProxy;
let scratch: string;
let ca: GeneratedCertificate;
let caFile: string;

/** A certificate for `hosts` issued by the test CA. */
const issue = (...hosts: string[]) =>
  issueCertificate({ commonName: hosts[0] ?? 'web', dnsNames: hosts, validDays: 1, issuer: ca });

/** A kubernetes.io/tls Secret as cert-manager writes one: the chain in tls.crt, the CA in ca.crt. */
function tlsSecret(name: string, pair: GeneratedCertificate, key = pair.privateKeyPem): string {
  const base64 = (text: string) => Buffer.from(text).toString('base64');
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: { name, namespace },
    data: {
      'tls.crt': base64(`${pair.certificatePem}${ca.certificatePem}`),
      'tls.key': base64(key),
      'ca.crt': base64(ca.certificatePem),
    },
  });
}

const tlsPort = () => edge?.edge.tlsPort ?? 0;

/** Waits until the edge serves (verified against the test CA) the certificate of `pair` for `host`. */
const servedBy = (host: string, pair: GeneratedCertificate) =>
  eventually(`the edge to serve serial ${serialOf(pair.certificatePem)} for ${host}`, async () =>
    (await servedSerialIfAny(tlsPort(), host, caFile)) === serialOf(pair.certificatePem) ? true : undefined,
  );

/** Waits until the CR is Ready for the certificate of `pair` (and returns it). */
const readyWith = (plural: string, name: string, pair: GeneratedCertificate) =>
  eventually(`${plural}/${name} Ready with serial ${serialOf(pair.certificatePem)}`, async () => {
    const cr = await getCr(plural, name);
    const ready = condition(cr, 'Ready');
    return ready?.status === 'True' &&
      ready.observedGeneration === cr?.metadata.generation &&
      String(cr?.status?.serialNumber).replace(/^0+/, '') === serialOf(pair.certificatePem)
      ? cr
      : undefined;
  });

interface KubeEvent {
  reason: string;
  type: string;
  message: string;
  involvedObject: { kind: string; name: string };
}

async function eventsOf(kind: string, name: string): Promise<KubeEvent[]> {
  const { stdout } = await kubectl(['get', 'events', '-n', namespace, '-o', 'json']);
  return (JSON.parse(stdout) as { items: KubeEvent[] }).items.filter(
    (event) => event.involvedObject.kind === kind && event.involvedObject.name === name,
  );
}

async function httpsEdge(host: string): Promise<void> {
  const created = await t.api('POST', '/edges/https', { hostports: [`${host}:443`] });
  expect(created.status, created.text).toBe(201);
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'edgeward-tls-secret-'));
  ca = await issueCertificate({ commonName: `edgeward test CA ${suffix}`, isCa: true, validDays: 2 });
  caFile = join(scratch, 'ca.pem');
  writeFileSync(caFile, ca.certificatePem);
  await h.start({
    operatorArgs: async (server) => {
      edge = await startTestEdge(server, { tls: true });
      proxy = await new AnswerDroppingProxy(server.baseUrl).start();
      // Given after the harness's own --api-url: the last one counts.
      return ['--api-url', proxy.url, '--ingress-status-address', STATUS_ADDRESS];
    },
  });
  t = h.t;
});

afterAll(async () => {
  await edge?.stop();
  await h.stop();
  await proxy?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('a TLSCertificate from a kubernetes.io/tls Secret', () => {
  const host = `web-${suffix}.example.com`;
  let first: GeneratedCertificate;
  let firstId: string;

  it('uploads the Secret’s chain once it exists; the edge serves it and status shows it', async () => {
    await httpsEdge(host);
    await apply(yamlOf('TLSCertificate', 'web', { secretRef: { name: 'web-tls' } }));
    const waiting = await waitFor('tlscertificates', 'web', 'False', 'SecretNotFound');
    expect(condition(waiting, 'Ready')?.message).toBe('spec.secretRef: Secret web-tls does not exist');

    first = await issue(host);
    await kubectl(['apply', '-f', '-'], tlsSecret('web-tls', first));
    // No poke: the Secret watch reconciles the certificate that names it.
    const cr = await readyWith('tlscertificates', 'web', first);
    firstId = String(cr.status?.id);
    expect(condition(cr, 'Ready')?.reason).toBe('Created');
    expect(cr.status).toMatchObject({
      subjectAlternativeNames: { dnsNames: [host] },
      issuerCommonName: `edgeward test CA ${suffix}`,
    });
    expect(Date.parse(String(cr.status?.notAfter))).toBe(
      Date.parse(new X509Certificate(first.certificatePem).validTo),
    );
    await servedBy(host, first);
    expect((await uploadedFor(t, host)).map((certificate) => certificate.id)).toEqual([firstId]);
    // A reconcile that finds the Secret as uploaded writes nothing.
    await h.expectNoDrift('tlscertificates', 'TLSCertificate', 'web');
  });

  it('replaces the certificate on the server when the Secret renews: the edge serves the new one, the old id is gone', async () => {
    const renewed = await issue(host);
    await kubectl(['apply', '-f', '-'], tlsSecret('web-tls', renewed));
    const cr = await readyWith('tlscertificates', 'web', renewed);
    const renewedId = String(cr.status?.id);
    expect(renewedId).not.toBe(firstId);
    expect(condition(cr, 'Ready')?.reason).toBe('Replaced');
    expect(cr.metadata.annotations?.['edgeward.dev/external-id']).toBe(renewedId);
    await servedBy(host, renewed);
    expect((await t.api('GET', `/tls_certificates/${firstId}`)).status).toBe(404);
    expect((await uploadedFor(t, host)).map((certificate) => certificate.id)).toEqual([renewedId]);
    // A routine replacement: a Normal event saying what changed.
    const replaced = await eventually('a Replaced event', async () =>
      (await eventsOf('TLSCertificate', 'web')).find((event) => event.reason === 'Replaced'),
    );
    expect(replaced.type).toBe('Normal');
    expect(replaced.message).toContain(`Secret web-tls holds another certificate (serial`);
    expect(replaced.message).toContain(`replaced ${firstId} with ${renewedId}`);
    firstId = renewedId;
    first = renewed;
  });

  it('keeps the certificate in force while the Secret is unusable or gone, and says so; never a key in status or events', async () => {
    const stranger = await issue(host);
    // The key of another certificate: refused before any upload.
    await kubectl(['apply', '-f', '-'], tlsSecret('web-tls', await issue(host), stranger.privateKeyPem));
    const invalid = await waitFor('tlscertificates', 'web', 'False', 'InvalidSecret');
    expect(condition(invalid, 'Ready')?.message).toBe(
      `spec.secretRef: Secret web-tls key tls.key is not the key of the certificate in Secret web-tls key tls.crt; the server keeps serving ${firstId}, the certificate in force`,
    );
    expect(invalid.status?.id).toBe(firstId);

    await kubectl(['delete', 'secret', '-n', namespace, 'web-tls']);
    const gone = await eventually('Ready False SecretNotFound', async () => {
      const cr = await getCr('tlscertificates', 'web');
      return condition(cr, 'Ready')?.reason === 'SecretNotFound' ? cr : undefined;
    });
    expect(condition(gone, 'Ready')?.message).toBe(
      `spec.secretRef: Secret web-tls does not exist; the server keeps serving ${firstId}, the certificate in force`,
    );
    expect(await servedSerial(tlsPort(), host, caFile)).toBe(serialOf(first.certificatePem));
    expect((await uploadedFor(t, host)).map((certificate) => certificate.id)).toEqual([firstId]);

    const back = await issue(host);
    await kubectl(['apply', '-f', '-'], tlsSecret('web-tls', back));
    await readyWith('tlscertificates', 'web', back);
    await servedBy(host, back);
    first = back;
    firstId = String((await getCr('tlscertificates', 'web'))?.status?.id);

    const everything = `${JSON.stringify(await getCr('tlscertificates', 'web'))}${JSON.stringify(
      await eventsOf('TLSCertificate', 'web'),
    )}`;
    expect(everything).not.toContain('PRIVATE KEY');
    expect(h.operatorOutput).not.toContain('PRIVATE KEY');
  });

  it('after a crash between the upload and the delete, the restarted operator leaves one certificate: the one it uploaded, or a newer one', async () => {
    // The replacement's upload is made on the server, its answer lost; the operator dies before it
    // deletes the old certificate.
    proxy.loseAnswers('POST', '/tls_certificates');
    const renewed = await issue(host);
    await kubectl(['apply', '-f', '-'], tlsSecret('web-tls', renewed));
    const [, made] = await eventually('the lost upload made on the server', async () => {
      const uploaded = await uploadedFor(t, host);
      return uploaded.length === 2 ? uploaded : undefined;
    });
    expect(made?.serial_number.replace(/^0+/, '')).toBe(serialOf(renewed.certificatePem));
    await h.stopOperator('SIGKILL');
    proxy.release();
    expect((await uploadedFor(t, host)).map((certificate) => certificate.id)).toEqual([firstId, made?.id]);

    // The next operator replays the same upload (its Idempotency-Key names the old id), then deletes the old.
    h.startOperator();
    const cr = await readyWith('tlscertificates', 'web', renewed);
    expect(cr.status?.id).toBe(made?.id);
    expect((await uploadedFor(t, host)).map((certificate) => certificate.id)).toEqual([made?.id]);
    await servedBy(host, renewed);

    // Again, and the Secret renews once more while the operator is down: the lost upload is no
    // longer what the Secret holds, so it is deleted too, and the newest uploaded in its place.
    const old = String(made?.id);
    proxy.loseAnswers('POST', '/tls_certificates');
    const second = await issue(host);
    await kubectl(['apply', '-f', '-'], tlsSecret('web-tls', second));
    const [, lost] = await eventually('the second lost upload made on the server', async () => {
      const uploaded = await uploadedFor(t, host);
      return uploaded.length === 2 ? uploaded : undefined;
    });
    await h.stopOperator('SIGKILL');
    proxy.release();
    const third = await issue(host);
    await kubectl(['apply', '-f', '-'], tlsSecret('web-tls', third));
    h.startOperator();
    const latest = await readyWith('tlscertificates', 'web', third);
    const uploaded = await uploadedFor(t, host);
    expect(uploaded.map((certificate) => certificate.id)).toEqual([latest.status?.id]);
    expect([old, lost?.id]).not.toContain(latest.status?.id);
    await servedBy(host, third);
  });

  it('deletes the certificate on the server with the CR', async () => {
    const id = String((await getCr('tlscertificates', 'web'))?.status?.id);
    await h.delete('tlscertificates', 'web');
    await h.waitGone('tlscertificates', 'web');
    expect((await t.api('GET', `/tls_certificates/${id}`)).status).toBe(404);
    expect(await uploadedFor(t, host)).toEqual([]);
  });
});

describe('an Ingress’s spec.tls', () => {
  const host = `shop-${suffix}.example.com`;
  const uncovered = `www-${suffix}.example.com`;

  const ingress = (name: string, className: string) => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name, namespace },
    spec: {
      ingressClassName: className,
      tls: [{ hosts: [host, uncovered], secretName: 'shop-tls' }],
      rules: [
        {
          host: className === 'edgeward' ? host : `other-${suffix}.example.com`,
          http: {
            paths: [
              { path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } },
            ],
          },
        },
      ],
    },
  });

  const ingressStatus = async (name: string) =>
    (
      JSON.parse((await kubectl(['get', '-n', namespace, 'ingress', name, '-o', 'json'])).stdout) as {
        status?: { loadBalancer?: { ingress?: unknown[] } };
      }
    ).status?.loadBalancer;

  /** The TLSCertificate the Ingress owns (by the label the operator puts on what it owns). */
  const ownedCertificate = async (ingressName: string): Promise<Cr | undefined> => {
    const { stdout } = await kubectl([
      'get',
      '-n',
      namespace,
      'tlscertificates.edgeward.dev',
      '-l',
      `edgeward.dev/ingress=${ingressName}`,
      '-o',
      'json',
    ]);
    const { items } = JSON.parse(stdout) as { items: Cr[] };
    return items[0];
  };

  it('becomes a TLSCertificate following the Secret: served, renewed, and the status carries --ingress-status-address', async () => {
    const pair = await issue(host);
    await kubectl(['apply', '-f', '-'], tlsSecret('shop-tls', pair));
    await kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [ingress('shop', 'edgeward'), ingress('other', 'nginx')],
      }),
    );
    const certificate = await eventually('the Ingress’s TLSCertificate Ready', async () => {
      const cr = await ownedCertificate('shop');
      return condition(cr, 'Ready')?.status === 'True' ? cr : undefined;
    });
    expect(certificate.spec).toMatchObject({ secretRef: { name: 'shop-tls' } });
    await servedBy(host, pair);
    const loadBalancer = await eventually('the Ingress status', async () => {
      const status = await ingressStatus('shop');
      return status?.ingress ? status : undefined;
    });
    expect(loadBalancer).toEqual({ ingress: [{ ip: STATUS_ADDRESS }] });

    // A host of spec.tls the Secret's certificate does not name is said, once.
    const warning = await eventually('a CertificateNotCovering event', async () =>
      (await eventsOf('Ingress', 'shop')).find((event) => event.reason === 'CertificateNotCovering'),
    );
    expect(warning).toMatchObject({ type: 'Warning' });
    expect(warning.message).toContain(`does not name ${uncovered}`);

    const renewed = await issue(host);
    await kubectl(['apply', '-f', '-'], tlsSecret('shop-tls', renewed));
    await servedBy(host, renewed);
    expect((await uploadedFor(t, host)).map((uploaded) => uploaded.serial_number.replace(/^0+/, ''))).toEqual(
      [serialOf(renewed.certificatePem)],
    );

    // An Ingress of another class: nothing owned, no status written.
    await h.settled();
    expect(await ownedCertificate('other')).toBeUndefined();
    expect((await ingressStatus('other'))?.ingress).toBeUndefined();
  });
});
