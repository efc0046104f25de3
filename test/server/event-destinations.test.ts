import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretBox } from '../../src/crypto/secret-box.js';
import { loadSecretKey } from '../../src/crypto/secret-key-file.js';
import { walkPages } from '../support/paging.js';
import { idPattern, RFC3339_UTC, startTestServer, type TestServer } from '../support/server.js';
import { storedData } from '../support/stored-data.js';

type Json = Record<string, unknown>;
type Target = Record<'kinesis' | 'firehose' | 'cloudwatch_logs' | 'datadog', Json | null>;
interface Destination {
  id: string;
  uri: string;
  created_at: string;
  description: string;
  metadata: string;
  format: string;
  target: Target;
  [key: string]: unknown;
}
interface DestinationList {
  event_destinations: Destination[];
  uri: string;
  next_page_uri: string | null;
}

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t.stop());

const ROLE_ARN = 'arn:aws:iam::123456789012:role/edgeward-events';
const ACCESS_KEY_ID = 'AKIAIOSFODNN7EXAMPLE';
const role = { role: { role_arn: ROLE_ARN } };
const creds = (secret: string) => ({
  creds: { aws_access_key_id: ACCESS_KEY_ID, aws_secret_access_key: secret },
});
const ARNS = {
  kinesis: ['stream_arn', 'arn:aws:kinesis:us-east-1:123456789012:stream/events'],
  firehose: ['delivery_stream_arn', 'arn:aws:firehose:eu-west-1:123456789012:deliverystream/events'],
  cloudwatch_logs: ['log_group_arn', 'arn:aws:logs:us-west-2:123456789012:log-group:edgeward-events'],
} as const;
const TARGET_KEYS = ['cloudwatch_logs', 'datadog', 'firehose', 'kinesis'];
const DESTINATION_KEYS = ['created_at', 'description', 'format', 'id', 'metadata', 'target', 'uri'];

function datadogTarget(apiKey = 'dd-api-key-0123456789abcdef') {
  return { datadog: { api_key: apiKey } };
}

async function create(body: Json) {
  return t.api<Destination>('POST', '/event_destinations', body);
}

/** Asserts the nested wire shape: all four members present, only `kind` non-null. */
function expectOnlyMember(target: Target, kind: keyof Target) {
  expect(Object.keys(target).sort()).toEqual(TARGET_KEYS);
  for (const member of TARGET_KEYS) {
    if (member === kind) expect(target[member as keyof Target]).not.toBeNull();
    else expect(target[member as keyof Target], member).toBeNull();
  }
}

describe('event destinations: AWS targets', () => {
  for (const [kind, [arnField, arn]] of Object.entries(ARNS) as [
    keyof typeof ARNS,
    readonly [string, string],
  ][]) {
    it(`creates a ${kind} target with a role and reads it back`, async () => {
      const created = await create({
        description: `${kind} via role`,
        metadata: '{"env":"test"}',
        format: 'json',
        target: { [kind]: { auth: role, [arnField]: arn } },
      });
      expect(created.status).toBe(201);
      const destination = created.body;
      expect(Object.keys(destination).sort()).toEqual(DESTINATION_KEYS);
      expect(destination.id).toMatch(idPattern('ed'));
      expect(destination.uri).toBe(`${t.baseUrl}/event_destinations/${destination.id}`);
      expect(destination.created_at).toMatch(RFC3339_UTC);
      expect(destination.description).toBe(`${kind} via role`);
      expect(destination.metadata).toBe('{"env":"test"}');
      expect(destination.format).toBe('json');
      expectOnlyMember(destination.target, kind);
      const member = destination.target[kind] as Json;
      expect(Object.keys(member).sort()).toEqual(['auth', arnField].sort());
      expect(member[arnField]).toBe(arn);
      expect(member.auth).toEqual({ role: { role_arn: ROLE_ARN }, creds: null });

      const fetched = await t.api<Destination>('GET', `/event_destinations/${destination.id}`);
      expect(fetched.status).toBe(200);
      expect(fetched.body).toEqual(destination);
    });

    it(`creates a ${kind} target with credentials and never returns the secret key`, async () => {
      const secret = `wJalrXUtnFEMI/K7MDENG/${kind}-SECRET`;
      const created = await create({ target: { [kind]: { auth: creds(secret), [arnField]: arn } } });
      expect(created.status).toBe(201);
      expect(created.text).not.toContain(secret);
      const auth = (created.body.target[kind] as Json).auth as Json;
      expect(Object.keys(auth).sort()).toEqual(['creds', 'role']);
      expect(auth.role).toBeNull();
      expect(auth.creds).toEqual({ aws_access_key_id: ACCESS_KEY_ID, aws_secret_access_key: null });
      expectOnlyMember(created.body.target, kind);

      const fetched = await t.api<Destination>('GET', `/event_destinations/${created.body.id}`);
      expect(fetched.text).not.toContain(secret);
      expect(fetched.body).toEqual(created.body);
    });
  }
});

describe('event destinations: Datadog targets', () => {
  it('creates a full Datadog target; the api_key reads back as null', async () => {
    const apiKey = 'dd0123456789abcdef0123456789abcd';
    const created = await create({
      format: 'JSON',
      target: {
        datadog: {
          api_key: apiKey,
          ddtags: 'env:prod,team:edge',
          service: 'edgeward',
          ddsite: 'datadoghq.eu',
        },
      },
    });
    expect(created.status).toBe(201);
    expect(created.text).not.toContain(apiKey);
    // The format reads back as spelled.
    expect(created.body.format).toBe('JSON');
    expectOnlyMember(created.body.target, 'datadog');
    expect(created.body.target.datadog).toEqual({
      api_key: null,
      ddtags: 'env:prod,team:edge',
      service: 'edgeward',
      ddsite: 'datadoghq.eu',
    });
  });

  it("defaults format to json and unset optional Datadog fields to ''", async () => {
    const created = await create({ target: datadogTarget() });
    expect(created.status).toBe(201);
    expect(created.body.format).toBe('json');
    expect(created.body.description).toBe('');
    expect(created.body.metadata).toBe('');
    expect(created.body.target.datadog).toEqual({ api_key: null, ddtags: '', service: '', ddsite: '' });
    expect(
      (await t.api<Destination>('GET', `/event_destinations/${created.body.id}`)).body.target.datadog,
    ).toEqual({ api_key: null, ddtags: '', service: '', ddsite: '' });
    // An explicit null is "unset" too.
    const nulls = await create({
      target: { datadog: { api_key: 'k', ddtags: null, service: null, ddsite: null } },
    });
    expect(nulls.status).toBe(201);
    expect(nulls.body.target.datadog).toEqual({ api_key: null, ddtags: '', service: '', ddsite: '' });
  });

  it('accepts every documented Datadog site', async () => {
    for (const ddsite of [
      'datadoghq.com',
      'us3.datadoghq.com',
      'us5.datadoghq.com',
      'ap1.datadoghq.com',
      'ddog-gov.com',
    ]) {
      const created = await create({ target: { datadog: { api_key: 'k', ddsite } } });
      expect(created.status, ddsite).toBe(201);
      expect((created.body.target.datadog as Json).ddsite).toBe(ddsite);
    }
  });
});

describe('event destinations: secrets at rest', () => {
  it('stores the target sealed: neither the row nor the database files hold a secret in plain text', async () => {
    const awsSecret = 'PLAINTEXT-aws-secret-7f3a9c1e5b';
    const ddKey = 'PLAINTEXT-datadog-key-2b8d4e6f0a';
    const aws = await create({
      target: { kinesis: { auth: creds(awsSecret), stream_arn: ARNS.kinesis[1] } },
    });
    const dd = await create({ target: datadogTarget(ddKey) });
    expect(aws.status).toBe(201);
    expect(dd.status).toBe(201);

    const db = t.server.app.edgeward.db;
    for (const [id, secret] of [
      [aws.body.id, awsSecret],
      [dd.body.id, ddKey],
    ] as const) {
      const { rows } = await sql<Json>`select * from event_destinations where id = ${id}`.execute(db);
      expect(rows).toHaveLength(1);
      const row = rows[0] as Json;
      expect(JSON.stringify(row)).not.toContain(secret);
      expect(String(row.target_sealed)).toMatch(/^v1\./);
      // The secret is kept (sealed, bound to this row), not dropped: the server's key opens it.
      const box = new SecretBox(loadSecretKey(t.dataDir, t.secretKey));
      expect(box.open(String(row.target_sealed), `event_destination:${id}`)).toContain(secret);
      expect(() => box.open(String(row.target_sealed), 'event_destination:ed_other')).toThrow();
    }
    for (const { source, bytes } of await storedData(t)) {
      expect(bytes.includes(awsSecret), source).toBe(false);
      expect(bytes.includes(ddKey), source).toBe(false);
    }
  });

  it('shows secrets as null in list and patch responses too', async () => {
    const secret = 'list-and-patch-secret-93hd8';
    const created = await create({
      target: { firehose: { auth: creds(secret), delivery_stream_arn: ARNS.firehose[1] } },
    });
    const listed = await t.api<DestinationList>('GET', '/event_destinations');
    expect(listed.status).toBe(200);
    expect(listed.text).not.toContain(secret);
    const inList = listed.body.event_destinations.find((item) => item.id === created.body.id);
    expect(inList).toEqual(created.body);

    const patched = await t.api<Destination>('PATCH', `/event_destinations/${created.body.id}`, {
      description: 'renamed',
    });
    expect(patched.status).toBe(200);
    expect(patched.text).not.toContain(secret);
    expect(patched.body).toEqual({ ...created.body, description: 'renamed' });
    expect(((patched.body.target.firehose as Json).auth as Json).creds).toEqual({
      aws_access_key_id: ACCESS_KEY_ID,
      aws_secret_access_key: null,
    });
  });
});

describe('event destinations: validation', () => {
  const kinesis = (auth: unknown, stream_arn: string = ARNS.kinesis[1]) => ({
    target: { kinesis: { auth, stream_arn } },
  });
  const cases: [string, Json, RegExp][] = [
    ['no target', {}, /^target: is required/],
    [
      'empty target',
      { target: {} },
      /^target: exactly one of kinesis, firehose, cloudwatch_logs, datadog must be set/,
    ],
    [
      'all members null',
      { target: { kinesis: null, firehose: null, cloudwatch_logs: null, datadog: null } },
      /^target: exactly one of kinesis, firehose, cloudwatch_logs, datadog must be set/,
    ],
    [
      'two members',
      { target: { ...datadogTarget(), kinesis: { auth: role, stream_arn: ARNS.kinesis[1] } } },
      /^target: exactly one of kinesis, firehose, cloudwatch_logs, datadog must be set/,
    ],
    [
      's3 target',
      { target: { s3: { bucket_arn: 'arn:aws:s3:::bucket' } } },
      /^target\.s3: s3 targets are not supported/,
    ],
    [
      's3 beside a valid target',
      { target: { ...datadogTarget(), s3: null } },
      /^target\.s3: s3 targets are not supported/,
    ],
    [
      'unknown target member',
      { target: { ...datadogTarget(), webhook: {} } },
      /^target\.webhook: unknown field/,
    ],
    ['auth with neither', kinesis({}), /^target\.kinesis\.auth: exactly one of role or creds must be set/],
    [
      'auth with both nulls',
      kinesis({ role: null, creds: null }),
      /^target\.kinesis\.auth: exactly one of role or creds must be set/,
    ],
    [
      'auth with both',
      kinesis({ ...role, ...creds('s') }),
      /^target\.kinesis\.auth: exactly one of role or creds must be set/,
    ],
    [
      'missing auth',
      { target: { kinesis: { stream_arn: ARNS.kinesis[1] } } },
      /^target\.kinesis\.auth: is required/,
    ],
    [
      'bad role ARN',
      kinesis({ role: { role_arn: 'arn:aws:iam::123:role/x' } }),
      /^target\.kinesis\.auth\.role\.role_arn: must be an IAM role ARN/,
    ],
    [
      'role ARN that is not a role',
      kinesis({ role: { role_arn: 'arn:aws:iam::123456789012:user/alice' } }),
      /^target\.kinesis\.auth\.role\.role_arn: /,
    ],
    [
      'bad access key id',
      kinesis({ creds: { aws_access_key_id: 'short', aws_secret_access_key: 's' } }),
      /^target\.kinesis\.auth\.creds\.aws_access_key_id: /,
    ],
    [
      'empty secret access key',
      kinesis({ creds: { aws_access_key_id: ACCESS_KEY_ID, aws_secret_access_key: '' } }),
      /^target\.kinesis\.auth\.creds\.aws_secret_access_key: must not be empty/,
    ],
    [
      'missing secret access key',
      kinesis({ creds: { aws_access_key_id: ACCESS_KEY_ID } }),
      /^target\.kinesis\.auth\.creds\.aws_secret_access_key: is required/,
    ],
    [
      'bad stream ARN',
      kinesis(role, 'not-an-arn'),
      /^target\.kinesis\.stream_arn: must be an ARN like arn:aws:kinesis:/,
    ],
    [
      'stream ARN of another service',
      kinesis(role, ARNS.firehose[1]),
      /^target\.kinesis\.stream_arn: must be an ARN like arn:aws:kinesis:/,
    ],
    [
      'bad delivery stream ARN',
      { target: { firehose: { auth: role, delivery_stream_arn: ARNS.kinesis[1] } } },
      /^target\.firehose\.delivery_stream_arn: must be an ARN like arn:aws:firehose:/,
    ],
    [
      'bad log group ARN',
      {
        target: {
          cloudwatch_logs: { auth: role, log_group_arn: 'arn:aws:logs:us-east-1:12345:log-group:x' },
        },
      },
      /^target\.cloudwatch_logs\.log_group_arn: must be an ARN like arn:aws:logs:/,
    ],
    [
      'firehose auth with neither',
      { target: { firehose: { auth: {}, delivery_stream_arn: ARNS.firehose[1] } } },
      /^target\.firehose\.auth: exactly one of role or creds must be set/,
    ],
    [
      'cloudwatch auth with both',
      {
        target: {
          cloudwatch_logs: { auth: { ...role, ...creds('s') }, log_group_arn: ARNS.cloudwatch_logs[1] },
        },
      },
      /^target\.cloudwatch_logs\.auth: exactly one of role or creds must be set/,
    ],
    [
      'datadog without api_key',
      { target: { datadog: { service: 'x' } } },
      /^target\.datadog\.api_key: is required/,
    ],
    [
      'datadog empty api_key',
      { target: { datadog: { api_key: '' } } },
      /^target\.datadog\.api_key: must not be empty/,
    ],
    [
      'datadog unknown site',
      { target: { datadog: { api_key: 'k', ddsite: 'datadoghq.example' } } },
      /^target\.datadog\.ddsite: must be one of "datadoghq\.com"/,
    ],
    [
      'datadog ddtags not a string',
      { target: { datadog: { api_key: 'k', ddtags: 3 } } },
      /^target\.datadog\.ddtags: must be a string/,
    ],
    ['format xml', { format: 'xml', target: datadogTarget() }, /^format: must be 'json'/],
    ['format empty', { format: '', target: datadogTarget() }, /^format: must be 'json'/],
    [
      'description over 255 bytes',
      { description: 'é'.repeat(128), target: datadogTarget() },
      /^description: must be at most 255 bytes/,
    ],
    [
      'metadata over 4096 bytes',
      { metadata: 'x'.repeat(4097), target: datadogTarget() },
      /^metadata: must be at most 4096 bytes/,
    ],
    ['unknown field', { target: datadogTarget(), region: 'us' }, /^region: unknown field/],
  ];
  for (const [name, body, message] of cases) {
    it(`rejects ${name} with a 400 naming the field`, async () => {
      const response = await create(body);
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ status_code: 400 });
      expect(response.body.error_code).toMatch(/^ERR_EDGEWARD_\d+$/);
      expect(response.body.msg).toMatch(message);
    });
  }

  it('accepts format in any letter case and keeps the spelling', async () => {
    const created = await create({ format: 'Json', target: datadogTarget() });
    expect(created.status).toBe(201);
    expect(created.body.format).toBe('Json');
  });

  it('accepts partition-qualified ARNs', async () => {
    const created = await create({
      target: {
        kinesis: {
          auth: { role: { role_arn: 'arn:aws-us-gov:iam::123456789012:role/path/to/role' } },
          stream_arn: 'arn:aws-cn:kinesis:cn-north-1:123456789012:stream/events',
        },
      },
    });
    expect(created.status).toBe(201);
  });
});

describe('event destinations: update', () => {
  it('patches description, metadata and format, keeping the target', async () => {
    const created = await create({
      description: 'a',
      target: { kinesis: { auth: role, stream_arn: ARNS.kinesis[1] } },
    });
    const patched = await t.api<Destination>('PATCH', `/event_destinations/${created.body.id}`, {
      metadata: '{"v":2}',
      format: 'JSON',
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({ ...created.body, metadata: '{"v":2}', format: 'JSON' });
    expect((await t.api('GET', `/event_destinations/${created.body.id}`)).body).toEqual(patched.body);
  });

  it('replaces the whole target when one is given', async () => {
    const created = await create({
      target: { kinesis: { auth: creds('old-secret'), stream_arn: ARNS.kinesis[1] } },
    });
    const patched = await t.api<Destination>('PATCH', `/event_destinations/${created.body.id}`, {
      target: { datadog: { api_key: 'new-dd-key', service: 'svc' } },
    });
    expect(patched.status).toBe(200);
    expectOnlyMember(patched.body.target, 'datadog');
    expect(patched.body.target.datadog).toEqual({
      api_key: null,
      ddtags: '',
      service: 'svc',
      ddsite: '',
    });
    expect(patched.body.description).toBe(created.body.description);
    const fetched = await t.api<Destination>('GET', `/event_destinations/${created.body.id}`);
    expect(fetched.body).toEqual(patched.body);

    // The new secret is what is sealed now; the old one is gone from the row.
    const { rows } = await sql<{
      target_sealed: string;
    }>`select target_sealed from event_destinations where id = ${created.body.id}`.execute(
      t.server.app.edgeward.db,
    );
    const opened = new SecretBox(loadSecretKey(t.dataDir, t.secretKey)).open(
      String(rows[0]?.target_sealed),
      `event_destination:${created.body.id}`,
    );
    expect(opened).toContain('new-dd-key');
    expect(opened).not.toContain('old-secret');
  });

  it('validates a patched target like a created one and leaves the row unchanged on 400', async () => {
    const created = await create({ target: datadogTarget() });
    for (const [target, message] of [
      [{}, /^target: exactly one of/],
      [
        { kinesis: { auth: {}, stream_arn: ARNS.kinesis[1] } },
        /^target\.kinesis\.auth: exactly one of role or creds/,
      ],
      [{ s3: {} }, /^target\.s3: s3 targets are not supported/],
      [null, /^target: must be an object, got null/],
    ] as const) {
      const bad = await t.api('PATCH', `/event_destinations/${created.body.id}`, { target });
      expect(bad.status).toBe(400);
      expect(bad.body.msg).toMatch(message);
    }
    const badFormat = await t.api('PATCH', `/event_destinations/${created.body.id}`, { format: 'yaml' });
    expect(badFormat.status).toBe(400);
    expect(badFormat.body.msg).toMatch(/^format: /);
    expect((await t.api('GET', `/event_destinations/${created.body.id}`)).body).toEqual(created.body);
  });
});

describe('event destinations: not found, delete and in use', () => {
  const missing = 'ed_000000000000000000000000000';

  it('answers 404 for unknown ids on get, patch and delete', async () => {
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { description: 'x' }],
      ['DELETE', undefined],
    ] as const) {
      const response = await t.api(method, `/event_destinations/${missing}`, body);
      expect(response.status, method).toBe(404);
      expect(response.body).toMatchObject({ error_code: 'ERR_EDGEWARD_400', status_code: 404 });
      expect(response.body.msg).toContain(missing);
    }
  });

  it('deletes an unused destination', async () => {
    const created = await create({ target: datadogTarget() });
    const deleted = await t.api('DELETE', `/event_destinations/${created.body.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await t.api('GET', `/event_destinations/${created.body.id}`)).status).toBe(404);
  });

  it('refuses (409) to delete a destination a subscription lists, until it is removed there', async () => {
    const destination = await create({ target: datadogTarget() });
    const other = await create({ target: datadogTarget() });
    const subscription = await t.api('POST', '/event_subscriptions', {
      sources: [{ type: 'ip_policy_created.v0' }],
      destination_ids: [other.body.id, destination.body.id],
    });
    expect(subscription.status).toBe(201);

    const refused = await t.api('DELETE', `/event_destinations/${destination.body.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ error_code: 'ERR_EDGEWARD_502', status_code: 409 });
    expect(refused.body.msg).toBe(
      `event destination ${destination.body.id} is used by event subscription ${subscription.body.id}; remove it there first`,
    );
    expect((await t.api('GET', `/event_destinations/${destination.body.id}`)).status).toBe(200);

    const unlinked = await t.api('PATCH', `/event_subscriptions/${subscription.body.id}`, {
      destination_ids: [other.body.id],
    });
    expect(unlinked.status).toBe(200);
    expect((await t.api('DELETE', `/event_destinations/${destination.body.id}`)).status).toBe(204);
    // The other one is still listed, so it is still refused.
    expect((await t.api('DELETE', `/event_destinations/${other.body.id}`)).status).toBe(409);
    expect((await t.api('DELETE', `/event_subscriptions/${subscription.body.id}`)).status).toBe(204);
    expect((await t.api('DELETE', `/event_destinations/${other.body.id}`)).status).toBe(204);
  });
});

describe('event destinations: paging', () => {
  it('pages newest first with limit=2 through absolute next_page_uri links', async () => {
    const mine: string[] = [];
    for (let i = 0; i < 5; i++)
      mine.push((await create({ description: `page ${i}`, target: datadogTarget() })).body.id);

    const all = await t.api<DestinationList>('GET', '/event_destinations?limit=100');
    const expected = all.body.event_destinations.map((item) => item.id);
    expect(expected.length).toBeLessThan(100);
    expect(expected.slice(0, 5)).toEqual([...mine].reverse());

    const { seen, pages } = await walkPages<DestinationList>(
      t,
      `${t.baseUrl}/event_destinations?limit=2`,
      'event_destinations',
      (page) => {
        expect(page.body.uri).toBe(`${t.baseUrl}/event_destinations`);
        expect(page.body.event_destinations.length).toBeLessThanOrEqual(2);
        for (const item of page.body.event_destinations)
          expect(Object.keys(item).sort()).toEqual(DESTINATION_KEYS);
        const next = page.body.next_page_uri;
        if (next !== null) {
          const last = page.body.event_destinations.at(-1)?.id;
          expect(next).toBe(`${t.baseUrl}/event_destinations?before_id=${last}&limit=2`);
        }
      },
    );
    expect(pages).toBe(Math.ceil(expected.length / 2));
    expect(seen).toEqual(expected);
  });
});
