import type { StoredTarget } from '../stored-target.js';
import { cloudWatchLogsTarget } from './cloudwatch-logs.js';
import { datadogTarget } from './datadog.js';
import type { DeliveryTarget, TargetEndpoints } from './delivery-target.js';
import { firehoseTarget } from './firehose.js';
import { kinesisTarget } from './kinesis.js';

/**
 * The sender for a stored target, which sets exactly one member (the API refuses anything else):
 * the one place that knows every kind of target. AWS targets assume a role as `edgeward-<id>`.
 */
export function deliveryTargetFor(
  target: StoredTarget,
  endpoints: TargetEndpoints,
  destinationId: string,
): DeliveryTarget {
  const sessionName = `edgeward-${destinationId}`;
  if (target.kinesis) return kinesisTarget(target.kinesis, endpoints, sessionName);
  if (target.firehose) return firehoseTarget(target.firehose, endpoints, sessionName);
  if (target.cloudwatch_logs) return cloudWatchLogsTarget(target.cloudwatch_logs, endpoints, destinationId);
  if (target.datadog) return datadogTarget(target.datadog, endpoints);
  throw new Error(`event destination ${destinationId} has no target set`);
}
