import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EdgewardClient } from '../../src/client/index.js';
import { eventsOf } from '../support/events.js';
import {
  attributeOf,
  mapNames,
  OPENSSL_EXTENDED_KEY_USAGE,
  OPENSSL_KEY_USAGE,
  type OpensslCertificate,
  OpensslWorkspace,
  opensslView,
  rfc3339Seconds,
} from '../support/openssl.js';
import { countRows, walkPages } from '../support/paging.js';
import { ADMIN_KEY, idPattern, RFC3339_UTC, startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let ws: OpensslWorkspace;
let rsaCa: OpensslCertificate;
let ecCa: OpensslCertificate;
let leaf: OpensslCertificate;
let noConstraints: OpensslCertificate;

const CA_KEYS = [
  'ca_pem',
  'created_at',
  'description',
  'extended_key_usages',
  'id',
  'key_usages',
  'metadata',
  'not_after',
  'not_before',
  'subject_common_name',
  'uri',
];

beforeAll(async () => {
  t = await startTestServer();
  ws = new OpensslWorkspace();
  rsaCa = ws.certificate({
    subject: '/C=DE/O=Acme Trust/CN=Acme Root CA R1',
    key: ws.key('rsa'),
    days: 3650,
    extensions: [
      'basicConstraints = critical,CA:TRUE',
      'keyUsage = critical,digitalSignature,keyCertSign,cRLSign',
      'extendedKeyUsage = serverAuth,clientAuth,codeSigning,1.3.6.1.4.1.99999.7',
      'subjectKeyIdentifier = hash',
    ],
  });
  // No CN at all: subject_common_name is ''. nonRepudiation shows the name chosen for bit 1.
  ecCa = ws.certificate({
    subject: '/O=Acme EC Issuing/OU=PKI',
    key: ws.key('ec'),
    days: 90,
    extensions: [
      'basicConstraints = critical,CA:TRUE,pathlen:0',
      'keyUsage = critical,nonRepudiation,keyCertSign,cRLSign',
    ],
  });
  leaf = ws.certificate({
    subject: '/CN=client.example.com',
    key: ws.key('ec'),
    issuer: rsaCa,
    extensions: ['basicConstraints = critical,CA:FALSE', 'keyUsage = digitalSignature'],
  });
  noConstraints = ws.certificate({
    subject: '/CN=no-basic-constraints',
    key: ws.key('ec'),
    extensions: ['keyUsage = keyCertSign'],
  });
});
afterAll(async () => {
  await t.stop();
  ws.cleanup();
});

/** Every derived field, as openssl reads the certificate. */
function expectedFromOpenssl(certificate: OpensslCertificate) {
  const view = opensslView(certificate.path);
  return {
    subject_common_name: attributeOf(view.subject, 'CN'),
    not_before: rfc3339Seconds(view.notBefore),
    not_after: rfc3339Seconds(view.notAfter),
    key_usages: mapNames(view.keyUsage, OPENSSL_KEY_USAGE),
    extended_key_usages: mapNames(view.extendedKeyUsage, OPENSSL_EXTENDED_KEY_USAGE),
  };
}

describe('certificate authorities', () => {
  it('uploads an RSA CA and derives every field as openssl reads it', async () => {
    const created = await t.api('POST', '/certificate_authorities', {
      ca_pem: rsaCa.pem,
      description: 'root for client certs',
      metadata: '{"team":"pki"}',
    });
    expect(created.status).toBe(201);
    const ca = created.body;
    expect(Object.keys(ca).sort()).toEqual(CA_KEYS);
    expect(ca.id).toMatch(idPattern('ca'));
    expect(ca.uri).toBe(`${t.baseUrl}/certificate_authorities/${ca.id}`);
    expect(ca.created_at).toMatch(RFC3339_UTC);
    expect(ca.description).toBe('root for client certs');
    expect(ca.metadata).toBe('{"team":"pki"}');
    expect(ca.ca_pem).toBe(rsaCa.pem);
    expect(ca).toMatchObject(expectedFromOpenssl(rsaCa));
    // Literal values too, so a mistake shared by the test's openssl mapping cannot hide.
    expect(ca.subject_common_name).toBe('Acme Root CA R1');
    expect(ca.key_usages).toEqual(['digital_signature', 'cert_sign', 'crl_sign']);
    expect(ca.extended_key_usages).toEqual([
      'server_auth',
      'client_auth',
      'code_signing',
      '1.3.6.1.4.1.99999.7',
    ]);
    expect(ca.not_before).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    expect(Date.parse(ca.not_after as string) - Date.parse(ca.not_before as string)).toBe(3650 * 86_400_000);

    const fetched = await t.api('GET', `/certificate_authorities/${ca.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body).toEqual(ca);
  });

  it('stores and returns the CA re-encoded from its certificate, without the text around it', async () => {
    const messy = `issued by the PKI team, password=hunter2\r\n${ecCa.pem.replaceAll('\n', '\r\n')}\r\nbye`;
    const created = await t.api('POST', '/certificate_authorities', { ca_pem: messy });
    expect(created.status).toBe(201);
    expect(created.body.ca_pem).toBe(ecCa.pem);
    const row = await t.server.app.edgeward.db
      .selectFrom('certificate_authorities')
      .select('ca_pem')
      .where('id', '=', String(created.body.id))
      .executeTakeFirstOrThrow();
    expect(row.ca_pem).toBe(ecCa.pem);
    const fetched = await t.api('GET', `/certificate_authorities/${created.body.id}`);
    expect(fetched.body.ca_pem).toBe(ecCa.pem);
    expect(fetched.text).not.toContain('hunter2');
  });

  it('uploads an EC CA without a common name', async () => {
    const created = await t.api('POST', '/certificate_authorities', { ca_pem: ecCa.pem });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      ...expectedFromOpenssl(ecCa),
      subject_common_name: '',
      key_usages: ['content_commitment', 'cert_sign', 'crl_sign'],
      extended_key_usages: [],
      description: '',
      metadata: '',
    });
  });

  it('updates only the description and metadata', async () => {
    const ca = (await t.api('POST', '/certificate_authorities', { ca_pem: ecCa.pem, description: 'a' })).body;
    const patched = await t.api('PATCH', `/certificate_authorities/${ca.id}`, { metadata: 'm' });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({ ...ca, metadata: 'm' });
    const both = await t.api('PATCH', `/certificate_authorities/${ca.id}`, {
      description: 'b',
      metadata: '',
    });
    expect(both.body).toEqual({ ...ca, description: 'b', metadata: '' });
    const immutable = await t.api('PATCH', `/certificate_authorities/${ca.id}`, { ca_pem: rsaCa.pem });
    expect(immutable.status).toBe(400);
    expect(immutable.body.msg).toBe('ca_pem: unknown field');
    expect((await t.api('GET', `/certificate_authorities/${ca.id}`)).body).toEqual(both.body);
  });

  it('rejects what is not exactly one CA certificate, naming ca_pem', async () => {
    const before = await countRows(t, 'certificate_authorities');
    const body = rsaCa.pem.split('\n').slice(1, -2).join('\n');
    // Valid PEM armour and base64, but DER cut short after ten lines.
    const truncated = `-----BEGIN CERTIFICATE-----\n${body.split('\n').slice(0, 10).join('\n')}\n-----END CERTIFICATE-----\n`;
    const publicKey = `-----BEGIN PUBLIC KEY-----\n${body}\n-----END PUBLIC KEY-----\n`;
    const cases: Array<[unknown, string | RegExp]> = [
      ['hello, I am not a certificate', 'ca_pem: is not a PEM-encoded X.509 certificate'],
      ['', 'ca_pem: is not a PEM-encoded X.509 certificate'],
      [truncated, 'ca_pem: is not a PEM-encoded X.509 certificate'],
      [
        rsaCa.pem.replace('END CERTIFICATE', 'END CERTIFICATE REQUEST'),
        /^ca_pem: is not a PEM-encoded X.509 certificate; found a malformed PEM block/,
      ],
      [publicKey, "ca_pem: is not a PEM-encoded X.509 certificate; found a 'PUBLIC KEY' block"],
      [leaf.pem, 'ca_pem: is not a CA certificate (basicConstraints CA is not true)'],
      [noConstraints.pem, 'ca_pem: is not a CA certificate (basicConstraints CA is not true)'],
      [
        rsaCa.pem + ecCa.pem,
        'ca_pem: contains 2 certificates; upload one CA certificate per certificate authority',
      ],
      [rsaCa.pem + rsaCa.key.pem, /^ca_pem: contains a private key/],
      [rsaCa.key.pem, /^ca_pem: contains a private key/],
      // A key pasted without its END line would otherwise ride along as text after the block.
      [rsaCa.pem + rsaCa.key.pem.replace(/-----END [A-Z ]+-----\n?$/, ''), /^ca_pem: contains a private key/],
      [
        `${rsaCa.pem}-----BEGIN CERTIFICATE-----\n${body}\n`,
        'ca_pem: has a -----BEGIN line without a matching -----END line',
      ],
      [42, 'ca_pem: must be a string, got number'],
    ];
    for (const [caPem, message] of cases) {
      const response = await t.api('POST', '/certificate_authorities', { ca_pem: caPem });
      expect(response.status, String(message)).toBe(400);
      expect(response.body.error_code).toBe('ERR_EDGEWARD_100');
      if (typeof message === 'string') expect(response.body.msg).toBe(message);
      else expect(response.body.msg).toMatch(message);
      // A refused private key is neither echoed nor stored.
      expect(response.text).not.toContain('PRIVATE KEY');
    }
    const missing = await t.api('POST', '/certificate_authorities', { description: 'x' });
    expect(missing.status).toBe(400);
    expect(missing.body.msg).toBe('ca_pem: is required');
    expect(await countRows(t, 'certificate_authorities')).toBe(before);
  });

  it('rejects unknown fields and over-long description or metadata', async () => {
    const unknown = await t.api('POST', '/certificate_authorities', { ca_pem: rsaCa.pem, name: 'x' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.msg).toBe('name: unknown field');

    const description = await t.api('POST', '/certificate_authorities', {
      ca_pem: rsaCa.pem,
      description: 'é'.repeat(128),
    });
    expect(description.status).toBe(400);
    expect(description.body.msg).toMatch(/^description: must be at most 255 bytes/);
    const metadata = await t.api('POST', '/certificate_authorities', {
      ca_pem: rsaCa.pem,
      metadata: 'x'.repeat(4097),
    });
    expect(metadata.status).toBe(400);
    expect(metadata.body.msg).toMatch(/^metadata: must be at most 4096 bytes/);
    const atLimits = await t.api('POST', '/certificate_authorities', {
      ca_pem: rsaCa.pem,
      description: 'x'.repeat(255),
      metadata: 'x'.repeat(4096),
    });
    expect(atLimits.status).toBe(201);
    const patchTooLong = await t.api('PATCH', `/certificate_authorities/${atLimits.body.id}`, {
      metadata: 'x'.repeat(4097),
    });
    expect(patchTooLong.status).toBe(400);
    expect(patchTooLong.body.msg).toMatch(/^metadata: /);
  });

  it('answers 404 for unknown ids on get, update and delete', async () => {
    const id = 'ca_0000000000000000000000000000';
    for (const [method, body] of [['GET'], ['PATCH', { description: 'x' }], ['DELETE']] as const) {
      const response = await t.api(method, `/certificate_authorities/${id}`, body);
      expect(response.status, method).toBe(404);
      expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_400', status_code: 404 });
      expect(response.body.msg).toContain(id);
    }
  });

  it('refuses to delete a CA that an edge mutual_tls module trusts, until the edge lets go', async () => {
    const ca = (await t.api('POST', '/certificate_authorities', { ca_pem: rsaCa.pem })).body;
    const other = (await t.api('POST', '/certificate_authorities', { ca_pem: ecCa.pem })).body;
    const db = t.server.app.edgeward.db;
    const edge = (id: string, modules: unknown) => ({
      id,
      created_at: '2026-01-01T00:00:00Z',
      description: '',
      metadata: '',
      hostports: '[]',
      modules: JSON.stringify(modules),
    });
    const tlsEdgeId = 'edgtls_000000000000000000000000001';
    const httpsEdgeId = 'edghts_000000000000000000000000001';
    const mutualTls = (ids: string[]) => ({ mutual_tls: { enabled: true, certificate_authority_ids: ids } });
    await db
      .insertInto('tls_edges')
      .values(edge(tlsEdgeId, mutualTls([other.id as string, ca.id as string])))
      .execute();
    await db
      .insertInto('https_edges')
      .values(edge(httpsEdgeId, mutualTls([ca.id as string])))
      .execute();
    // Ids differing only in case match SQLite's LIKE, but are other CAs: they must not block.
    await db
      .insertInto('https_edges')
      .values(
        edge(
          'edghts_000000000000000000000000002',
          mutualTls([(ca.id as string).toUpperCase().replace('CA_', 'ca_')]),
        ),
      )
      .execute();

    const refused = await t.api('DELETE', `/certificate_authorities/${ca.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error_code).toBe('ERR_EDGEWARD_502');
    expect(refused.body.msg).toBe(
      `certificate authority ${ca.id} is used by the mutual_tls module of ${tlsEdgeId}, ${httpsEdgeId}; remove it there first`,
    );
    expect((await t.api('GET', `/certificate_authorities/${ca.id}`)).status).toBe(200);

    await db
      .updateTable('tls_edges')
      .set({ modules: JSON.stringify(mutualTls([other.id as string])) })
      .where('id', '=', tlsEdgeId)
      .execute();
    await db.updateTable('https_edges').set({ modules: '{}' }).where('id', '=', httpsEdgeId).execute();
    expect((await t.api('DELETE', `/certificate_authorities/${ca.id}`)).status).toBe(204);
    expect((await t.api('GET', `/certificate_authorities/${ca.id}`)).status).toBe(404);
    expect((await t.api('DELETE', `/certificate_authorities/${other.id}`)).status).toBe(409);
  });

  it('records created, updated and deleted events', async () => {
    const ca = (await t.api('POST', '/certificate_authorities', { ca_pem: ecCa.pem })).body;
    await t.api('PATCH', `/certificate_authorities/${ca.id}`, { description: 'renamed' });
    expect((await t.api('DELETE', `/certificate_authorities/${ca.id}`)).status).toBe(204);
    const events = await eventsOf(t, ca.id as string);
    expect(events.map((event) => event.type)).toEqual([
      'certificate_authority_created.v0',
      'certificate_authority_updated.v0',
      'certificate_authority_deleted.v0',
    ]);
    expect(JSON.parse(events[0]?.payload ?? '{}')).toEqual({ object: ca });
    expect(JSON.parse(events[1]?.payload ?? '{}').object.description).toBe('renamed');
    expect(JSON.parse(events[2]?.payload ?? '{}')).toEqual({ object: { id: ca.id } });
  });

  it('creates once per Idempotency-Key', async () => {
    const headers = { 'idempotency-key': `ca-${Date.now()}` };
    const first = await t.api('POST', '/certificate_authorities', { ca_pem: rsaCa.pem }, { headers });
    const before = await countRows(t, 'certificate_authorities');
    const again = await t.api('POST', '/certificate_authorities', { ca_pem: rsaCa.pem }, { headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await countRows(t, 'certificate_authorities')).toBe(before);
    const different = await t.api('POST', '/certificate_authorities', { ca_pem: ecCa.pem }, { headers });
    expect(different.status).toBe(409);
    expect(different.body.error_code).toBe('ERR_EDGEWARD_500');
  });

  it('pages newest first through every certificate authority', async () => {
    for (let index = 0; index < 5; index++) {
      expect((await t.api('POST', '/certificate_authorities', { ca_pem: ecCa.pem })).status).toBe(201);
    }
    const total = await countRows(t, 'certificate_authorities');
    const { seen, pages } = await walkPages<{
      certificate_authorities: { id: string }[];
      next_page_uri: string | null;
    }>(t, '/certificate_authorities?limit=2', 'certificate_authorities', (page) => {
      expect(page.body.certificate_authorities.length).toBeLessThanOrEqual(2);
      for (const item of page.body.certificate_authorities) expect(Object.keys(item).sort()).toEqual(CA_KEYS);
    });
    expect(seen).toHaveLength(total);
    expect(new Set(seen).size).toBe(total);
    expect(seen).toEqual([...seen].sort().reverse());
    expect(pages).toBe(Math.ceil(total / 2));
    const first = await t.api('GET', '/certificate_authorities?limit=1');
    expect(first.body.uri).toBe(`${t.baseUrl}/certificate_authorities`);
    expect(first.body.next_page_uri).toBe(
      `${t.baseUrl}/certificate_authorities?before_id=${seen[0]}&limit=1`,
    );
  });

  it('works through the typed client', async () => {
    const client = new EdgewardClient({ baseUrl: t.baseUrl, apiKey: ADMIN_KEY });
    try {
      const ca = await client.certificateAuthorities.create({ ca_pem: rsaCa.pem, description: 'typed' });
      expect(ca.subject_common_name).toBe('Acme Root CA R1');
      expect(await client.certificateAuthorities.get(ca.id)).toEqual(ca);
      const updated = await client.certificateAuthorities.update(ca.id, { metadata: 'x' });
      expect(updated.metadata).toBe('x');
      const ids: string[] = [];
      for await (const item of client.certificateAuthorities.iterate({ limit: 3 })) ids.push(item.id);
      expect(ids).toContain(ca.id);
      await client.certificateAuthorities.delete(ca.id);
      await expect(client.certificateAuthorities.get(ca.id)).rejects.toMatchObject({ statusCode: 404 });
    } finally {
      await client.close();
    }
  });
});
