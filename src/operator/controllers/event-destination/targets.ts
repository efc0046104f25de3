import type { EventTarget, EventTargetInput } from '../../../schemas/event-destinations.js';
import { redactedEventTarget, storedEventTarget } from '../../../schemas/event-target-forms.js';
import type { EventDestinationSpec } from '../../crds/definitions/event-destination.js';
import type { SecretKeyRequest } from '../shared/secret-values.js';

type TargetSpec = EventDestinationSpec['target'];
type AwsAuthSpec = NonNullable<TargetSpec['kinesis']>['auth'];

/** The spec members naming an AWS auth, with the API member name and their ARN field. */
const AWS_TARGETS = [
  { spec: 'kinesis', api: 'kinesis', arnSpec: 'streamArn', arnApi: 'stream_arn' },
  { spec: 'firehose', api: 'firehose', arnSpec: 'deliveryStreamArn', arnApi: 'delivery_stream_arn' },
  { spec: 'cloudwatchLogs', api: 'cloudwatch_logs', arnSpec: 'logGroupArn', arnApi: 'log_group_arn' },
] as const;

/** The Secret keys the target names, by spec path. */
export function targetSecretRequests(target: TargetSpec): SecretKeyRequest[] {
  const requests: SecretKeyRequest[] = [];
  for (const kind of AWS_TARGETS) {
    const ref = target[kind.spec]?.auth.creds?.awsSecretAccessKeyRef;
    if (ref) requests.push({ field: `spec.target.${kind.spec}.auth.creds.awsSecretAccessKeyRef`, ref });
  }
  if (target.datadog)
    requests.push({ field: 'spec.target.datadog.apiKeySecretRef', ref: target.datadog.apiKeySecretRef });
  return requests;
}

function authInput(auth: AwsAuthSpec, field: string, secretOf: SecretOf) {
  if (auth.role) return { role: { role_arn: auth.role.roleArn } };
  if (!auth.creds) throw new Error(`${field}: neither role nor creds is set`);
  return {
    creds: {
      aws_access_key_id: auth.creds.awsAccessKeyId,
      aws_secret_access_key: secretOf(`${field}.creds.awsSecretAccessKeyRef`),
    },
  };
}

/** The value of the Secret key a spec field names. */
type SecretOf = (field: string) => string;

/** The target as the API takes it, with the Secret values in it (request bodies only). */
export function targetInput(target: TargetSpec, secretOf: SecretOf): EventTargetInput {
  for (const kind of AWS_TARGETS) {
    const member = target[kind.spec];
    if (!member) continue;
    const auth = authInput(member.auth, `spec.target.${kind.spec}.auth`, secretOf);
    const arn = (member as Record<string, unknown>)[kind.arnSpec] as string;
    return { [kind.api]: { auth, [kind.arnApi]: arn } } as EventTargetInput;
  }
  if (target.datadog) {
    const { ddtags, service, ddsite } = target.datadog;
    return {
      datadog: {
        api_key: secretOf('spec.target.datadog.apiKeySecretRef'),
        ...(ddtags !== undefined ? { ddtags } : {}),
        ...(service !== undefined ? { service } : {}),
        ...(ddsite !== undefined ? { ddsite } : {}),
      },
    };
  }
  throw new Error('spec.target: no target member is set');
}

/**
 * The target as the server shows it (secrets null, unset Datadog strings ''), derived as the server
 * derives it, so the spec and the server compare without the secrets; a changed Secret is found by
 * its resourceVersion instead.
 */
export function targetReadForm(target: TargetSpec): EventTarget {
  return redactedEventTarget(storedEventTarget(targetInput(target, () => '')));
}
