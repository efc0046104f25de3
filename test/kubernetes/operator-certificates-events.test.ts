import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretBox } from '../../src/crypto/secret-box.js';
import { loadSecretKey } from '../../src/crypto/secret-key-file.js';
import { DatadogReceiver } from '../support/datadog-receiver.js';
import { OpensslWorkspace, opensslView } from '../support/openssl.js';
import { type Cr, condition, OperatorHarness } from '../support/operator-harness.js';
import { idPattern, type TestServer } from '../support/server.js';

/**
 * The operator end to end for what reads Secrets the user provides: TLSCertificate (its private
 * key, sent once) and EventDestination (a Datadog API key, sent again when the Secret changes),
 * plus EventSubscription naming destinations by reference, and the Delivering condition that
 * tells how delivery to a destination goes.
 */

const h = new OperatorHarness('certs-events');
const { apply, yamlOf, kubectl, waitFor, waitGone, expectNoDrift, eventually, getCr } = h;
const { namespace, suffix } = h;
let t: TestServer;
const workspace = new OpensslWorkspace();
/** The API key of the destination the Delivering test watches; the intake refuses any other. */
const DELIVERY_KEY = 'dd-key-deliveries';
let receiver: DatadogReceiver;

beforeAll(async () => {
  receiver = await new DatadogReceiver([DELIVERY_KEY]).start();
  await h.start({
    // AWS too points at the local intake: no test here may reach a real AWS endpoint.
    eventDelivery: {
      datadogUrl: receiver.url,
      awsEndpointUrl: receiver.url,
      pollIntervalMs: 100,
      backoff: { initialMs: 100, maxMs: 1000 },
    },
  });
  t = h.t;
});

afterAll(async () => {
  await h.stop();
  await receiver?.stop();
  workspace.cleanup();
});

/** The secrets sealed in an event destination's row, opened with the server's key. */
async function sealedTarget(id: string): Promise<string> {
  const { rows } = await sql<{ target_sealed: string }>`
    select target_sealed from event_destinations where id = ${id}`.execute(t.server.app.edgeward.db);
  return new SecretBox(loadSecretKey(t.dataDir, t.secretKey)).open(
    String(rows[0]?.target_sealed),
    `event_destination:${id}`,
  );
}

describe('edgeward operator: certificates and events', () => {
  it('uploads a TLSCertificate with its key from a Secret, once, and shows the certificate in status', async () => {
    const key = workspace.key('ec');
    const certificate = workspace.certificate({
      subject: `/O=Edgeward Test/CN=web-${suffix}.example.com`,
      key,
      extensions: [
        `subjectAltName = DNS:web-${suffix}.example.com, IP:192.0.2.7`,
        'keyUsage = critical,digitalSignature',
        'extendedKeyUsage = serverAuth',
      ],
    });
    const cert = (description: string) =>
      yamlOf('TLSCertificate', 'web', {
        description,
        certificatePem: certificate.pem,
        privateKeySecretRef: { name: 'web-key', key: 'tls.key' },
      });
    await apply(cert('web'));
    const waiting = await waitFor('tlscertificates', 'web', 'False', 'SecretNotFound');
    expect(condition(waiting, 'Ready')?.message).toMatch(/^spec\.privateKeySecretRef: Secret web-key/);

    await kubectl([
      'create',
      'secret',
      'generic',
      '-n',
      namespace,
      'web-key',
      `--from-file=tls.key=${key.path}`,
    ]);
    // No poke: the Secret watch reconciles the certificate that names it.
    const cr = await waitFor('tlscertificates', 'web');
    const id = cr.status?.id as string;
    expect(id).toMatch(idPattern('cert'));
    const view = opensslView(certificate.path);
    expect(cr.status).toMatchObject({
      subjectCommonName: `web-${suffix}.example.com`,
      subjectAlternativeNames: { dnsNames: [`web-${suffix}.example.com`], ips: ['192.0.2.7'] },
      serialNumber: view.serial.toLowerCase(),
      privateKeyType: 'ecdsa',
      extendedKeyUsages: ['server_auth'],
    });
    const remote = (await t.api('GET', `/tls_certificates/${id}`)).body as Record<string, unknown>;
    expect(remote).toMatchObject({ description: 'web', not_after: cr.status?.notAfter });
    expect(JSON.stringify(remote)).not.toContain('PRIVATE KEY');
    await expectNoDrift('tlscertificates', 'TLSCertificate', 'web');

    // The key was needed once: the Secret can go; a description change is a PATCH of the same id.
    await kubectl(['delete', 'secret', '-n', namespace, 'web-key']);
    await apply(cert('web, renamed'));
    const updated = await waitFor('tlscertificates', 'web');
    expect(updated.status?.id).toBe(id);
    expect(condition(updated, 'Ready')?.reason).toBe('Updated');
    expect(
      ((await t.api('GET', `/tls_certificates/${id}`)).body as { description: string }).description,
    ).toBe('web, renamed');

    await h.delete('tlscertificates', 'web');
    await waitGone('tlscertificates', 'web');
    expect((await t.api('GET', `/tls_certificates/${id}`)).status).toBe(404);
  });

  it('sends a Datadog destination its API key from a Secret, and again when the Secret changes', async () => {
    await kubectl([
      'create',
      'secret',
      'generic',
      '-n',
      namespace,
      'datadog',
      '--from-literal=api-key=dd-key-one',
    ]);
    const destination = (ddtags: string) =>
      yamlOf('EventDestination', 'datadog', {
        description: 'to datadog',
        target: {
          datadog: { apiKeySecretRef: { name: 'datadog', key: 'api-key' }, ddtags, ddsite: 'datadoghq.eu' },
        },
      });
    await apply(destination('env:test'));
    const cr = await waitFor('eventdestinations', 'datadog');
    const id = cr.status?.id as string;
    expect(id).toMatch(idPattern('ed'));
    expect(Object.keys(cr.status?.secretVersions as Record<string, string>)).toEqual(['datadog/api-key']);
    expect(JSON.stringify(cr)).not.toContain('dd-key-one');
    const remote = (await t.api('GET', `/event_destinations/${id}`)).body as {
      format: string;
      target: { datadog: Record<string, unknown> };
    };
    expect(remote.format).toBe('json');
    expect(remote.target.datadog).toEqual({
      api_key: null,
      ddtags: 'env:test',
      service: '',
      ddsite: 'datadoghq.eu',
    });
    expect(await sealedTarget(id)).toContain('dd-key-one');
    await expectNoDrift('eventdestinations', 'EventDestination', 'datadog');

    // A new key in the same Secret: sent again (the server cannot show what it holds).
    await kubectl([
      'patch',
      'secret',
      '-n',
      namespace,
      'datadog',
      '--type=merge',
      '-p',
      JSON.stringify({ data: { 'api-key': Buffer.from('dd-key-two').toString('base64') } }),
    ]);
    // No poke: the edited Secret reconciles the destination naming it.
    await eventually('the new key on the server', async () =>
      (await sealedTarget(id)).includes('dd-key-two') ? true : undefined,
    );
    expect(await sealedTarget(id)).not.toContain('dd-key-one');

    // A spec change of the target is sent too.
    await apply(destination('env:prod'));
    await eventually('new ddtags', async () => {
      const now = (await t.api('GET', `/event_destinations/${id}`)).body as {
        target: { datadog: { ddtags: string } };
      };
      return now.target.datadog.ddtags === 'env:prod' ? true : undefined;
    });
  });

  it('subscribes to event types for destinations it names, waiting for them to be Ready', async () => {
    const subscription = (types: string[]) =>
      yamlOf('EventSubscription', 'audit', {
        description: 'audit trail',
        sources: types.map((type) => ({ type })),
        destinationRefs: [{ name: 'audit-sink' }],
      });
    await apply(subscription(['ip_policy_created.v0', 'ip_policy_deleted.v0']));
    await waitFor('eventsubscriptions', 'audit', 'False', 'ReferenceNotReady');

    await apply(
      yamlOf('EventDestination', 'audit-sink', {
        target: {
          kinesis: {
            auth: { role: { roleArn: 'arn:aws:iam::123456789012:role/edgeward-events' } },
            streamArn: 'arn:aws:kinesis:us-east-1:123456789012:stream/audit',
          },
        },
      }),
    );
    const sink = await waitFor('eventdestinations', 'audit-sink');
    const cr = await waitFor('eventsubscriptions', 'audit');
    const id = cr.status?.id as string;
    expect(id).toMatch(idPattern('esb'));
    type Subscription = { sources: { type: string }[]; destinations: { id: string }[] };
    const remote = (await t.api('GET', `/event_subscriptions/${id}`)).body as Subscription;
    expect(remote.sources.map((source) => source.type).sort()).toEqual([
      'ip_policy_created.v0',
      'ip_policy_deleted.v0',
    ]);
    expect(remote.destinations.map((destination) => destination.id)).toEqual([sink.status?.id]);
    await expectNoDrift('eventsubscriptions', 'EventSubscription', 'audit');

    await apply(subscription(['ip_policy_updated.v0']));
    await eventually('the new sources', async () => {
      const now = (await t.api('GET', `/event_subscriptions/${id}`)).body as Subscription;
      return JSON.stringify(now.sources.map((source) => source.type)) === '["ip_policy_updated.v0"]'
        ? true
        : undefined;
    });

    await h.delete('eventsubscriptions', 'audit');
    await waitGone('eventsubscriptions', 'audit');
    expect((await t.api('GET', `/event_subscriptions/${id}`)).status).toBe(404);
    expect(await getCr('eventdestinations', 'audit-sink')).toBeDefined();
  });

  it("says in Delivering how delivery goes: failing with the intake's error, then delivering again", async () => {
    receiver.mode = 'down';
    await kubectl([
      'create',
      'secret',
      'generic',
      '-n',
      namespace,
      'deliveries-key',
      `--from-literal=api-key=${DELIVERY_KEY}`,
    ]);
    // The shortest resync an object may ask for: the operator re-reads delivery on its own.
    // (A failing destination is also re-read after a minute; the resync comes first here.)
    await apply(
      yamlOf(
        'EventDestination',
        'deliveries',
        { target: { datadog: { apiKeySecretRef: { name: 'deliveries-key', key: 'api-key' } } } },
        { 'edgeward.dev/resync-period': '10s' },
      ),
      yamlOf('EventSubscription', 'deliveries', {
        sources: [{ type: 'ip_policy_created.v0' }],
        destinationRefs: [{ name: 'deliveries' }],
      }),
    );
    const created = await waitFor('eventdestinations', 'deliveries');
    expect(condition(created, 'Delivering')).toMatchObject({ status: 'Unknown', reason: 'NoEventsYet' });
    await waitFor('eventsubscriptions', 'deliveries');

    const policy = await t.api('POST', '/ip_policies', { description: 'an event to deliver' });
    expect(policy.status, policy.text).toBe(201);
    const delivering = (status: string, reason: string) =>
      eventually(`eventdestinations/deliveries Delivering=${status} ${reason}`, async () => {
        const cr = await getCr('eventdestinations', 'deliveries');
        const found = condition(cr, 'Delivering');
        return found?.status === status && found.reason === reason ? (cr as Cr) : undefined;
      });
    const id = created.status?.id as string;
    await eventually('the server to see delivery fail', async () => {
      const status = await t.api<{ state: string }>('GET', `/event_destinations/${id}/delivery_status`);
      return status.body.state === 'failing' ? true : undefined;
    });
    // Spares the test a resync period: a label change reconciles at once (recovery below waits for one).
    await kubectl(['label', '-n', namespace, 'eventdestinations.edgeward.dev', 'deliveries', 'look=now']);
    const failing = await delivering('False', 'DeliveryFailing');
    expect(condition(failing, 'Delivering')?.message).toContain('Datadog answered 503');
    // Ready is about the spec: a target that refuses events does not make the destination unready.
    expect(condition(failing, 'Ready')?.status).toBe('True');

    receiver.mode = 'up';
    const recovered = await delivering('True', 'Delivering');
    expect(condition(recovered, 'Ready')?.status).toBe('True');
    const delivered = receiver.envelopesFor(DELIVERY_KEY);
    expect(delivered.map((envelope) => [envelope.event_type, envelope.object.id])).toEqual([
      ['ip_policy_created.v0', policy.body.id],
    ]);
    expect(receiver.violations).toEqual([]);
    // Delivery that keeps going (counts and times move on) writes no status.
    await expectNoDrift('eventdestinations', 'EventDestination', 'deliveries');
  });

  it('registers an AgentIngress and shows the NS records and regional domains to set up', async () => {
    const domain = `ingress-${suffix}.example.com`;
    const ingress = (privateKeyType: string) =>
      yamlOf('AgentIngress', 'agents', { domain, certificateManagementPolicy: { privateKeyType } });
    await apply(ingress('rsa'));
    const cr = await waitFor('agentingresses', 'agents');
    const id = cr.status?.id as string;
    type Ingress = {
      ns_targets: string[];
      region_domains: string[];
      certificate_management_policy: { private_key_type: string } | null;
    };
    const remote = (await t.api('GET', `/agent_ingresses/${id}`)).body as Ingress;
    expect(remote.ns_targets.length).toBeGreaterThan(0);
    expect(cr.status?.nsTargets).toEqual(remote.ns_targets);
    expect(cr.status?.regionDomains).toEqual(remote.region_domains);
    expect(remote.region_domains.every((name) => name.endsWith(`.${domain}`))).toBe(true);
    await expectNoDrift('agentingresses', 'AgentIngress', 'agents');

    await apply(ingress('ecdsa'));
    await eventually('the new key type', async () => {
      const now = (await t.api('GET', `/agent_ingresses/${id}`)).body as Ingress;
      return now.certificate_management_policy?.private_key_type === 'ecdsa' ? true : undefined;
    });
    await h.delete('agentingresses', 'agents');
    await waitGone('agentingresses', 'agents');
    expect((await t.api('GET', `/agent_ingresses/${id}`)).status).toBe(404);
  });
});
