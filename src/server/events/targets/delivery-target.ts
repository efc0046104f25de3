import type { Dispatcher } from 'undici';

/** One envelope on its way to a target. */
export interface OutboundRecord {
  deliveryId: string;
  /** The resource the event is about: Kinesis partitions by it, so one resource's events stay in order. */
  partitionKey: string;
  /** When the event happened (milliseconds since the epoch). */
  timestampMs: number;
  /** The envelope, serialized as JSON. */
  body: string;
}

/**
 * What became of one record of a send that reached the target. `permanent`: the target will never
 * take this record (it is kept as undeliverable instead of retried).
 */
export type RecordResult = { accepted: true } | { accepted: false; error: string; permanent?: boolean };

/** The documented limits of one call of the target's API, counted by `DeliveryTarget.recordBytes`. */
export interface TargetLimits {
  maxRecords: number;
  /** A record that costs more can never be accepted: it is undeliverable. */
  maxRecordBytes: number;
  /** The sum over a call of what its records cost. */
  maxBatchBytes: number;
}

/**
 * A destination's target, ready to send. `send` delivers the records in the given order in one
 * call and says per record whether the target took it; it throws when the call as a whole failed
 * (unreachable, refused credentials, throttled, `signal` aborted at the deadline), and nothing is
 * then assumed delivered.
 */
export interface DeliveryTarget {
  readonly kind: string;
  readonly limits: TargetLimits;
  /** What the record costs in a call, as the target counts it (its body as sent, with framing). */
  recordBytes(record: OutboundRecord): number;
  send(records: OutboundRecord[], signal: AbortSignal): Promise<RecordResult[]>;
  close(): void;
}

/** The target refused the call for its size (HTTP 413): the same records in smaller calls may pass. */
export class BatchTooLargeError extends Error {
  override name = 'BatchTooLargeError';
}

/** Where targets are reached: settings of the server, not of a destination. */
export interface TargetEndpoints {
  /** Every AWS service (Kinesis, Firehose, CloudWatch Logs, STS) at this URL instead of AWS's own. */
  awsEndpointUrl?: string | undefined;
  /** Datadog's logs intake at this base URL instead of the site's `https://http-intake.logs.<site>`. */
  datadogUrl?: string | undefined;
  /** The HTTP client Datadog calls go through (a custom CA, a proxy); undici's global one by default. */
  datadogDispatcher?: Dispatcher | undefined;
  /** A call that takes longer fails (and is retried). */
  requestTimeoutMs: number;
}

/** The byte size the limits count. */
export const byteLength = (text: string) => Buffer.byteLength(text, 'utf8');

/** A thrown value as one line for a destination's `last_error`: the name and message, no stack. */
export function describeFailure(error: unknown): string {
  if (error instanceof Error) {
    const name = error.name && error.name !== 'Error' ? `${error.name}: ` : '';
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : '';
    return `${name}${error.message}${cause}`.slice(0, 1000);
  }
  return String(error).slice(0, 1000);
}
