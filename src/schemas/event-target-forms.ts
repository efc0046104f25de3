import type { EventTarget, EventTargetInput } from './event-destinations.js';

/**
 * An event destination's target has three forms: the input (`eventTargetInput`), the stored one
 * (every member present, unset ones null, secrets in the clear: sealed at rest) and the read form
 * (`eventTarget`: the stored one with its write-only secrets null). The stored form is made here
 * once from the input, and the read form derived from it, so the server's reads and the operator's
 * comparison of spec and server cannot disagree.
 */

/** The write-only members of every target: null in the read form. */
const WRITE_ONLY = new Set(['aws_secret_access_key', 'api_key']);

type AwsAuthInput = NonNullable<EventTargetInput['kinesis']>['auth'];

function storedAuth(auth: AwsAuthInput) {
  return {
    role: auth.role ? { role_arn: auth.role.role_arn } : null,
    creds: auth.creds
      ? {
          aws_access_key_id: auth.creds.aws_access_key_id,
          aws_secret_access_key: auth.creds.aws_secret_access_key,
        }
      : null,
  };
}
export type StoredAwsAuth = ReturnType<typeof storedAuth>;

/** Validated input -> the full stored shape (absent members become null). */
export function storedEventTarget(input: EventTargetInput) {
  return {
    kinesis: input.kinesis
      ? { auth: storedAuth(input.kinesis.auth), stream_arn: input.kinesis.stream_arn }
      : null,
    firehose: input.firehose
      ? { auth: storedAuth(input.firehose.auth), delivery_stream_arn: input.firehose.delivery_stream_arn }
      : null,
    cloudwatch_logs: input.cloudwatch_logs
      ? { auth: storedAuth(input.cloudwatch_logs.auth), log_group_arn: input.cloudwatch_logs.log_group_arn }
      : null,
    datadog: input.datadog
      ? {
          api_key: input.datadog.api_key,
          // The spec types these as strings: unset (or null) is ''.
          ddtags: input.datadog.ddtags ?? '',
          service: input.datadog.service ?? '',
          ddsite: input.datadog.ddsite ?? '',
        }
      : null,
  };
}
export type StoredEventTarget = ReturnType<typeof storedEventTarget>;

function redacted(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([name, member]) => [name, WRITE_ONLY.has(name) ? null : redacted(member)]),
  );
}

/** The read form: the stored target with every write-only secret null. */
export function redactedEventTarget(stored: StoredEventTarget): EventTarget {
  return redacted(stored) as EventTarget;
}
