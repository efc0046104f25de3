import {
  CloudWatchLogsClient,
  CreateLogGroupCommand,
  DescribeLogStreamsCommand,
  GetLogEventsCommand,
} from '@aws-sdk/client-cloudwatch-logs';
import { CreateDeliveryStreamCommand, FirehoseClient } from '@aws-sdk/client-firehose';
import {
  CreateStreamCommand,
  DescribeStreamCommand,
  GetRecordsCommand,
  GetShardIteratorCommand,
  KinesisClient,
} from '@aws-sdk/client-kinesis';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { EventEnvelope } from '../../src/schemas/event-delivery.js';
import { createDestination, deliveryStatus, routedEventIds, subscribe } from '../support/event-delivery.js';
import { eventually } from '../support/eventually.js';
import {
  AWS_TEST_CREDENTIALS,
  AWS_TEST_REGION,
  MOTO_ACCOUNT,
  MOTO_MISSING,
  MOTO_VERSION,
  type Moto,
  startMoto,
} from '../support/moto.js';
import { RecordingProxy } from '../support/recording-proxy.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { describeUnless } from '../support/skip-reason.js';

/**
 * Delivery to Kinesis, Firehose and CloudWatch Logs through the AWS SDK, against moto in server
 * mode (real AWS wire protocols on loopback), read back through the AWS SDK and compared with the
 * changes made. A recording proxy in front of moto shows which operations were called and which
 * access key signed them (the role's temporary key, assumed once), and plays an outage.
 */
let moto: Moto;
let proxy: RecordingProxy;
let t: TestServer;

/** The server's own identity, which assumes roles (the SDK's default chain reads the environment). */
const BASE_IDENTITY = { AWS_ACCESS_KEY_ID: 'AKIABASEIDENTITY0001', AWS_SECRET_ACCESS_KEY: 'base-secret' };
const STATIC_KEY_ID = 'AKIASTATICCREDS00001';

const clientConfig = () => ({
  region: AWS_TEST_REGION,
  endpoint: moto.url,
  credentials: AWS_TEST_CREDENTIALS,
  requestHandler: new NodeHttpHandler(),
});

beforeAll(async () => {
  if (MOTO_MISSING) return;
  Object.assign(process.env, BASE_IDENTITY);
  moto = await startMoto();
  proxy = await new RecordingProxy(moto.url).start();
  t = await startTestServer({
    eventDelivery: {
      awsEndpointUrl: proxy.url,
      pollIntervalMs: 100,
      backoff: { initialMs: 100, maxMs: 400 },
    },
  });
});
afterAll(async () => {
  await t?.stop();
  await proxy?.stop();
  await moto?.stop();
});

const creds = { creds: { aws_access_key_id: STATIC_KEY_ID, aws_secret_access_key: 'static-secret-value' } };

async function createStream(kinesis: KinesisClient, name: string): Promise<string> {
  await kinesis.send(new CreateStreamCommand({ StreamName: name, ShardCount: 1 }));
  const described = await kinesis.send(new DescribeStreamCommand({ StreamName: name }));
  return described.StreamDescription?.StreamARN ?? '';
}

/** Every record of a one-shard stream, in sequence order, with its partition key. */
async function streamRecords(kinesis: KinesisClient, name: string) {
  const iterator = await kinesis.send(
    new GetShardIteratorCommand({
      StreamName: name,
      ShardId: 'shardId-000000000000',
      ShardIteratorType: 'TRIM_HORIZON',
    }),
  );
  const { Records = [] } = await kinesis.send(
    new GetRecordsCommand({ ShardIterator: iterator.ShardIterator, Limit: 10_000 }),
  );
  return Records.map((record) => ({
    partitionKey: record.PartitionKey,
    envelope: JSON.parse(Buffer.from(record.Data ?? new Uint8Array()).toString('utf8')) as EventEnvelope,
  }));
}

describeUnless(MOTO_MISSING, `event delivery to AWS (moto ${MOTO_VERSION ?? 'server'})`, () => {
  it('puts Kinesis records signed with the given key, partitioned by resource, in commit order, after an outage', async () => {
    const kinesis = new KinesisClient(clientConfig());
    const streamArn = await createStream(kinesis, 'edgeward-audit');
    const destinationId = await createDestination(t, { kinesis: { auth: creds, stream_arn: streamArn } });
    await subscribe(t, ['ip_policy_created.v0', 'ip_policy_updated.v0'], [destinationId]);

    proxy.down = true;
    const policies = [];
    for (let index = 0; index < 6; index++) {
      policies.push((await t.api('POST', '/ip_policies', { description: `k${index}` })).body);
    }
    for (const policy of policies.slice(0, 3)) {
      await t.api('PATCH', `/ip_policies/${policy.id}`, { description: 'changed' });
    }
    await eventually(
      () => deliveryStatus(t, destinationId),
      (status) => status.state === 'failing' && status.backlog === 9,
      10_000,
    );
    expect((await deliveryStatus(t, destinationId)).last_error?.message).toMatch(/503|Unavailable/);
    const putsWhileDown = proxy.count('Kinesis_20131202.PutRecords');
    proxy.down = false;

    await eventually(
      () => deliveryStatus(t, destinationId),
      (status) => status.backlog === 0 && status.delivered === 9,
      15_000,
    );
    const records = await streamRecords(kinesis, 'edgeward-audit');
    expect(records).toHaveLength(9);
    expect(records.map((record) => record.envelope.event_id)).toEqual(await routedEventIds(t, destinationId));
    for (const record of records) expect(record.partitionKey).toBe(record.envelope.object.id);
    expect(records[0]?.envelope.object).toEqual(policies[0]);
    expect(new Set(records.map((record) => record.envelope.id)).size).toBe(9);
    // The nine waiting events went in one call once the stream could be reached.
    expect(proxy.count('Kinesis_20131202.PutRecords') - putsWhileDown).toBe(1);
    const signers = new Set(
      proxy.calls.filter((call) => call.operation.endsWith('PutRecords')).map((call) => call.accessKeyId),
    );
    expect(signers).toEqual(new Set([STATIC_KEY_ID]));
  });

  it('assumes a role once through STS and puts Firehose batches with its key, as NDJSON', async () => {
    const s3 = new S3Client({ ...clientConfig(), forcePathStyle: true });
    await s3.send(new CreateBucketCommand({ Bucket: 'edgeward-firehose' }));
    const firehose = new FirehoseClient(clientConfig());
    const created = await firehose.send(
      new CreateDeliveryStreamCommand({
        DeliveryStreamName: 'edgeward-events',
        ExtendedS3DestinationConfiguration: {
          RoleARN: `arn:aws:iam::${MOTO_ACCOUNT}:role/firehose`,
          BucketARN: 'arn:aws:s3:::edgeward-firehose',
        },
      }),
    );
    const roleArn = `arn:aws:iam::${MOTO_ACCOUNT}:role/edgeward-events`;
    const destinationId = await createDestination(t, {
      firehose: { auth: { role: { role_arn: roleArn } }, delivery_stream_arn: created.DeliveryStreamARN },
    });
    await subscribe(t, ['bot_user_created.v0'], [destinationId]);
    const assumedBefore = proxy.count('AssumeRole');
    for (let round = 0; round < 3; round++) {
      expect((await t.api('POST', '/bot_users', { name: `firehose-${round}` })).status).toBe(201);
      await eventually(
        () => deliveryStatus(t, destinationId),
        (status) => status.delivered === round + 1,
        10_000,
      );
    }
    const puts = proxy.calls.filter((call) => call.operation === 'Firehose_20150804.PutRecordBatch');
    expect(puts.length).toBeGreaterThanOrEqual(3);
    // The temporary key of the role, not the server's own, and the role assumed once for all three.
    expect(proxy.count('AssumeRole') - assumedBefore).toBe(1);
    const assumedKeys = new Set(puts.map((call) => call.accessKeyId));
    expect(assumedKeys.size).toBe(1);
    expect([...assumedKeys][0]).not.toBe(BASE_IDENTITY.AWS_ACCESS_KEY_ID);
    expect(
      proxy.calls.find((call) => call.operation === 'AssumeRole')?.accessKeyId,
      'the server identity assumes the role',
    ).toBe(BASE_IDENTITY.AWS_ACCESS_KEY_ID);

    const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'edgeward-firehose' }));
    let text = '';
    for (const object of listed.Contents ?? []) {
      const got = await s3.send(new GetObjectCommand({ Bucket: 'edgeward-firehose', Key: object.Key }));
      text += await got.Body?.transformToString();
    }
    const lines = text.split('\n').filter(Boolean);
    const envelopes = lines.map((line) => JSON.parse(line) as EventEnvelope);
    expect(envelopes.map((envelope) => envelope.event_type)).toEqual(Array(3).fill('bot_user_created.v0'));
    // One S3 object per batch, whose keys do not sort by time: compare the sets (order is proven above).
    expect(envelopes.map((envelope) => envelope.event_id).sort()).toEqual(
      (await routedEventIds(t, destinationId)).sort(),
    );
  });

  it('writes CloudWatch Logs events into a stream it creates, in order, with the event times', async () => {
    const logs = new CloudWatchLogsClient(clientConfig());
    await logs.send(new CreateLogGroupCommand({ logGroupName: 'edgeward-audit' }));
    const destinationId = await createDestination(t, {
      cloudwatch_logs: {
        auth: creds,
        log_group_arn: `arn:aws:logs:${AWS_TEST_REGION}:${MOTO_ACCOUNT}:log-group:edgeward-audit:*`,
      },
    });
    await subscribe(t, ['credential_created.v0', 'credential_deleted.v0'], [destinationId]);
    const credential = (await t.api('POST', '/credentials', { description: 'cwl' })).body;
    expect((await t.api('DELETE', `/credentials/${credential.id}`)).status).toBe(204);
    await eventually(
      () => deliveryStatus(t, destinationId),
      (status) => status.delivered === 2,
      10_000,
    );
    const streams = await logs.send(new DescribeLogStreamsCommand({ logGroupName: 'edgeward-audit' }));
    expect(streams.logStreams?.map((stream) => stream.logStreamName)).toEqual([`edgeward-${destinationId}`]);
    const events = await logs.send(
      new GetLogEventsCommand({
        logGroupName: 'edgeward-audit',
        logStreamName: `edgeward-${destinationId}`,
        startFromHead: true,
      }),
    );
    const envelopes = (events.events ?? []).map((event) => JSON.parse(event.message ?? '') as EventEnvelope);
    expect(envelopes.map((envelope) => envelope.event_type)).toEqual([
      'credential_created.v0',
      'credential_deleted.v0',
    ]);
    expect(envelopes[0]?.object.token).toBeNull();
    expect(envelopes[1]?.object).toEqual({ id: credential.id });
    const timestamps = (events.events ?? []).map((event) => event.timestamp ?? 0);
    expect(timestamps).toEqual([...timestamps].sort((a, b) => a - b));
    expect(Math.abs((timestamps[0] ?? 0) - Date.parse(envelopes[0]?.created_at ?? ''))).toBeLessThan(2000);
  });

  it('waits on a missing stream; a test event reports why, then succeeds once it exists, and the backlog follows', async () => {
    const kinesis = new KinesisClient(clientConfig());
    const streamArn = `arn:aws:kinesis:${AWS_TEST_REGION}:${MOTO_ACCOUNT}:stream/edgeward-later`;
    const destinationId = await createDestination(t, { kinesis: { auth: creds, stream_arn: streamArn } });
    await subscribe(t, ['tls_certificate_deleted.v0', 'reserved_addr_deleted.v0'], [destinationId]);
    const addr = (await t.api('POST', '/reserved_addrs', {})).body;
    expect((await t.api('DELETE', `/reserved_addrs/${addr.id}`)).status).toBe(204);
    const failing = await eventually(
      () => deliveryStatus(t, destinationId),
      (status) => status.state === 'failing' && status.backlog === 1,
      10_000,
    );
    expect(failing.last_error?.message).toContain('ResourceNotFoundException');

    const before = await t.api('POST', `/event_destinations/${destinationId}/test_event`);
    expect(before.body).toMatchObject({ delivered: false });
    expect(before.body.error).toContain('ResourceNotFoundException');
    await createStream(kinesis, 'edgeward-later');
    const after = await t.api('POST', `/event_destinations/${destinationId}/test_event`);
    expect(after.body).toMatchObject({ delivered: true, error: null });
    await eventually(
      () => deliveryStatus(t, destinationId),
      (status) => status.backlog === 0 && status.state === 'delivering',
      5000,
    );
    const records = await streamRecords(kinesis, 'edgeward-later');
    // The retry and the test event race once the stream exists: either may land first.
    expect(records.map((record) => record.envelope.event_type).sort()).toEqual([
      'event_destination_test.v0',
      'reserved_addr_deleted.v0',
    ]);
  });
});
