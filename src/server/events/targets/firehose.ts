import { FirehoseClient, PutRecordBatchCommand } from '@aws-sdk/client-firehose';
import type { StoredEventTarget } from '../../../schemas/event-target-forms.js';
import { awsClientConfig, parseArn, perRecordResults } from './aws-client-config.js';
import {
  byteLength,
  type DeliveryTarget,
  type OutboundRecord,
  type RecordResult,
  type TargetEndpoints,
} from './delivery-target.js';

type FirehoseTarget = NonNullable<StoredEventTarget['firehose']>;

/**
 * Data Firehose, through PutRecordBatch: up to 500 records and 4 MiB a call, 1,000 KiB a record.
 * Each record ends with a newline, so what Firehose writes to its destination is NDJSON. (The API
 * names delivery streams only by name; the ARN's region picks the endpoint.)
 */
export function firehoseTarget(
  target: FirehoseTarget,
  endpoints: TargetEndpoints,
  sessionName: string,
): DeliveryTarget {
  const client = new FirehoseClient(
    awsClientConfig(target.auth, target.delivery_stream_arn, endpoints, sessionName),
  );
  const streamName = parseArn(target.delivery_stream_arn).resource.replace(/^deliverystream\//, '');
  return {
    kind: 'firehose',
    limits: { maxRecords: 500, maxRecordBytes: 1000 * 1024, maxBatchBytes: 4 * 1024 * 1024 },
    recordBytes: (record) => byteLength(record.body) + 1,
    async send(records: OutboundRecord[], signal: AbortSignal): Promise<RecordResult[]> {
      const output = await client.send(
        new PutRecordBatchCommand({
          DeliveryStreamName: streamName,
          Records: records.map((record) => ({ Data: Buffer.from(`${record.body}\n`, 'utf8') })),
        }),
        { abortSignal: signal },
      );
      return perRecordResults(records.length, output.RequestResponses);
    },
    close: () => client.destroy(),
  };
}
