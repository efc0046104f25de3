import { KinesisClient, PutRecordsCommand } from '@aws-sdk/client-kinesis';
import type { StoredEventTarget } from '../../../schemas/event-target-forms.js';
import { awsClientConfig, perRecordResults } from './aws-client-config.js';
import {
  byteLength,
  type DeliveryTarget,
  type OutboundRecord,
  type RecordResult,
  type TargetEndpoints,
} from './delivery-target.js';

type KinesisTarget = NonNullable<StoredEventTarget['kinesis']>;

/**
 * Kinesis Data Streams, through PutRecords on the stream's ARN (so its account, not a same-named
 * stream of the caller's): up to 500 records and 5 MiB a call, 1 MiB a record counting data and
 * partition key. The partition key is the resource id, so one resource's events share a shard.
 */
export function kinesisTarget(
  target: KinesisTarget,
  endpoints: TargetEndpoints,
  sessionName: string,
): DeliveryTarget {
  const client = new KinesisClient(awsClientConfig(target.auth, target.stream_arn, endpoints, sessionName));
  return {
    kind: 'kinesis',
    limits: { maxRecords: 500, maxRecordBytes: 1024 * 1024, maxBatchBytes: 5 * 1024 * 1024 },
    recordBytes: (record) => byteLength(record.body) + byteLength(record.partitionKey),
    async send(records: OutboundRecord[], signal: AbortSignal): Promise<RecordResult[]> {
      const output = await client.send(
        new PutRecordsCommand({
          StreamARN: target.stream_arn,
          Records: records.map((record) => ({
            Data: Buffer.from(record.body, 'utf8'),
            PartitionKey: record.partitionKey,
          })),
        }),
        { abortSignal: signal },
      );
      return perRecordResults(records.length, output.Records);
    },
    close: () => client.destroy(),
  };
}
