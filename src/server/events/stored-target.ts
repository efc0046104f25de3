import type { SecretBox } from '../../crypto/secret-box.js';
import type { EventTargetInput } from '../../schemas/event-destinations.js';

/**
 * An event destination's target as sealed at rest: every member present, secrets in the clear
 * (inside the seal only). The API writes it; the dispatcher opens it to deliver.
 */
export interface StoredAwsAuth {
  role: { role_arn: string } | null;
  creds: { aws_access_key_id: string; aws_secret_access_key: string } | null;
}
export interface StoredTarget {
  kinesis: { auth: StoredAwsAuth; stream_arn: string } | null;
  firehose: { auth: StoredAwsAuth; delivery_stream_arn: string } | null;
  cloudwatch_logs: { auth: StoredAwsAuth; log_group_arn: string } | null;
  datadog: { api_key: string; ddtags: string; service: string; ddsite: string } | null;
}

type AwsAuthInput = NonNullable<EventTargetInput['kinesis']>['auth'];

function storedAuth(auth: AwsAuthInput): StoredAwsAuth {
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

/** Validated input -> the full stored shape (absent members become null). */
export function storedTarget(input: EventTargetInput): StoredTarget {
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

/** The seal's context binds the ciphertext to its row: a target copied to another row will not open. */
const sealContext = (destinationId: string) => `event_destination:${destinationId}`;

export function sealTarget(secretBox: SecretBox, destinationId: string, target: EventTargetInput): string {
  return secretBox.seal(JSON.stringify(storedTarget(target)), sealContext(destinationId));
}

export function openTarget(secretBox: SecretBox, destinationId: string, sealed: string): StoredTarget {
  let text: string;
  try {
    text = secretBox.open(sealed, sealContext(destinationId));
  } catch (cause) {
    throw new Error(`target of event destination ${destinationId} cannot be unsealed (wrong secret key?)`, {
      cause,
    });
  }
  // Written by storedTarget() and authenticated by AES-GCM, so its shape is ours.
  return JSON.parse(text) as StoredTarget;
}
