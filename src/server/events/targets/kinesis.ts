import { KinesisClient, PutRecordsCommand } from '@aws-sdk/client-kinesis';
import type { StoredTarget } from '../stored-target.js';
import { awsClientConfig, parseArn } from './aws-client-config.js';
import type { DeliveryTarget, OutboundRecord, RecordResult, TargetEndpoints } from './delivery-target.js';

type KinesisTarget = NonNullable<StoredTarget['kinesis']>;

/**
 * Kinesis Data Streams, through PutRecords: up to 500 records and 5 MiB a call, 1 MiB a record
 * (data and partition key). The partition key is the resource id, so the events of one resource
 * land on one shard, in order.
 */
export function kinesisTarget(
  target: KinesisTarget,
  endpoints: TargetEndpoints,
  sessionName: string,
): DeliveryTarget {
  const client = new KinesisClient(awsClientConfig(target.auth, target.stream_arn, endpoints, sessionName));
  const streamName = parseArn(target.stream_arn).resource.replace(/^stream\//, '');
  return {
    kind: 'kinesis',
    limits: {
      maxRecords: 500,
      maxRecordBytes: 1024 * 1024 - 256,
      maxBatchBytes: 5 * 1024 * 1024,
      recordOverheadBytes: 256,
    },
    async send(records: OutboundRecord[]): Promise<RecordResult[]> {
      const output = await client.send(
        new PutRecordsCommand({
          StreamName: streamName,
          Records: records.map((record) => ({
            Data: Buffer.from(record.body, 'utf8'),
            PartitionKey: record.partitionKey,
          })),
        }),
      );
      const results = output.Records ?? [];
      return records.map((_, index) => {
        const result = results[index];
        if (result && !result.ErrorCode) return { accepted: true };
        return {
          accepted: false,
          error: `${result?.ErrorCode ?? 'NoResult'}: ${result?.ErrorMessage ?? 'no result for the record'}`,
        };
      });
    },
    close: () => client.destroy(),
  };
}
