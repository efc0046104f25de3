import {
  CloudWatchLogsClient,
  CreateLogStreamCommand,
  PutLogEventsCommand,
  ResourceAlreadyExistsException,
  ResourceNotFoundException,
} from '@aws-sdk/client-cloudwatch-logs';
import type { StoredEventTarget } from '../../../schemas/event-target-forms.js';
import { awsClientConfig, parseArn } from './aws-client-config.js';
import {
  byteLength,
  type DeliveryTarget,
  type OutboundRecord,
  type RecordResult,
  type TargetEndpoints,
} from './delivery-target.js';

type CloudWatchLogsTarget = NonNullable<StoredEventTarget['cloudwatch_logs']>;

/** CloudWatch Logs accepts events at most 14 days old; keep a day's margin. */
const OLDEST_ACCEPTED_MS = 13 * 24 * 3600 * 1000;
/** One call may not span more than 24 hours. */
const LONGEST_SPAN_MS = 23 * 3600 * 1000;

/**
 * Timestamps CloudWatch Logs takes: in order within the call (routing order may differ slightly
 * from event time), within 23 hours of the call's newest event, and no older than 13 days. The
 * event's own time stays in the envelope's `created_at`.
 */
export function logEventTimestamps(records: OutboundRecord[], now: number): number[] {
  const newest = Math.min(now, Math.max(...records.map((record) => record.timestampMs)));
  const floor = Math.max(now - OLDEST_ACCEPTED_MS, newest - LONGEST_SPAN_MS);
  let previous = floor;
  return records.map((record) => {
    previous = Math.max(previous, Math.min(record.timestampMs, now), floor);
    return previous;
  });
}

/**
 * CloudWatch Logs, through PutLogEvents into the log stream `edgeward-<destination id>` of the log
 * group, which the dispatcher creates when it is missing: up to 10,000 events and 1,048,576 bytes
 * a call (each message plus 26 bytes), 256 KiB an event.
 */
export function cloudWatchLogsTarget(
  target: CloudWatchLogsTarget,
  endpoints: TargetEndpoints,
  destinationId: string,
): DeliveryTarget {
  const client = new CloudWatchLogsClient(
    awsClientConfig(target.auth, target.log_group_arn, endpoints, `edgeward-${destinationId}`),
  );
  // `log-group:<name>` or `log-group:<name>:*` (the form IAM policies use).
  const logGroupName = parseArn(target.log_group_arn)
    .resource.replace(/^log-group:/, '')
    .replace(/:\*$/, '');
  const logStreamName = `edgeward-${destinationId}`;
  let streamKnown = false;

  const createStream = async (signal: AbortSignal) => {
    try {
      await client.send(new CreateLogStreamCommand({ logGroupName, logStreamName }), { abortSignal: signal });
    } catch (error) {
      if (!(error instanceof ResourceAlreadyExistsException)) throw error;
    }
    streamKnown = true;
  };
  const put = (records: OutboundRecord[], signal: AbortSignal) => {
    const timestamps = logEventTimestamps(records, Date.now());
    return client.send(
      new PutLogEventsCommand({
        logGroupName,
        logStreamName,
        logEvents: records.map((record, index) => ({ timestamp: timestamps[index], message: record.body })),
      }),
      { abortSignal: signal },
    );
  };

  return {
    kind: 'cloudwatch_logs',
    limits: { maxRecords: 10_000, maxRecordBytes: 256 * 1024, maxBatchBytes: 1_048_576 },
    // CloudWatch Logs counts each message's UTF-8 bytes plus 26.
    recordBytes: (record) => byteLength(record.body) + 26,
    async send(records: OutboundRecord[], signal: AbortSignal): Promise<RecordResult[]> {
      if (!streamKnown) await createStream(signal);
      let output: Awaited<ReturnType<typeof put>>;
      try {
        output = await put(records, signal);
      } catch (error) {
        // The stream was deleted behind our back: make it again, once.
        if (!(error instanceof ResourceNotFoundException) || !/stream/i.test(error.message)) throw error;
        await createStream(signal);
        output = await put(records, signal);
      }
      const rejected = output.rejectedLogEventsInfo;
      return records.map((_, index): RecordResult => {
        if (rejected?.tooNewLogEventStartIndex !== undefined && index >= rejected.tooNewLogEventStartIndex)
          return { accepted: false, error: 'CloudWatch Logs refused the event as too new' };
        if (rejected?.tooOldLogEventEndIndex !== undefined && index <= rejected.tooOldLogEventEndIndex)
          return { accepted: false, permanent: true, error: 'CloudWatch Logs refused the event as too old' };
        if (rejected?.expiredLogEventEndIndex !== undefined && index <= rejected.expiredLogEventEndIndex)
          return {
            accepted: false,
            permanent: true,
            error: "CloudWatch Logs refused the event as older than the log group's retention",
          };
        return { accepted: true };
      });
    },
    close: () => client.destroy(),
  };
}
