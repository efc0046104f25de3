import type { StoredEventTarget } from '../../../schemas/event-target-forms.js';
import type { DeliveryTarget, TargetEndpoints } from './delivery-target.js';

/** Builds a destination's sender: `deliveryTargetFor`, or a fake in tests. */
export type DeliveryTargetFactory = (
  target: StoredEventTarget,
  endpoints: TargetEndpoints,
  destinationId: string,
) => DeliveryTarget | Promise<DeliveryTarget>;

/**
 * The sender for a stored target, which sets exactly one member (the API refuses anything else):
 * the one place that knows every kind of target. AWS targets assume a role as `edgeward-<id>`.
 * Each kind's code (the AWS SDK clients are ~15 MiB) is loaded when a destination of it is first
 * used, so a server that delivers nowhere, or only to Datadog, never holds it.
 */
export const deliveryTargetFor: DeliveryTargetFactory = async (target, endpoints, destinationId) => {
  const sessionName = `edgeward-${destinationId}`;
  if (target.kinesis)
    return (await import('./kinesis.js')).kinesisTarget(target.kinesis, endpoints, sessionName);
  if (target.firehose)
    return (await import('./firehose.js')).firehoseTarget(target.firehose, endpoints, sessionName);
  if (target.cloudwatch_logs) {
    const { cloudWatchLogsTarget } = await import('./cloudwatch-logs.js');
    return cloudWatchLogsTarget(target.cloudwatch_logs, endpoints, destinationId);
  }
  if (target.datadog) return (await import('./datadog.js')).datadogTarget(target.datadog, endpoints);
  throw new Error(`event destination ${destinationId} has no target set`);
};
