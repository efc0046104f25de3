import { z } from 'zod';
import { describedInputFields, describedResourceFields, exactlyOneOf, listOf } from './common.js';

/**
 * Event destinations: where and how account events are sent.
 *
 * Secrets (`creds.aws_secret_access_key`, `datadog.api_key`) are write-only. The server keeps the
 * whole target sealed at rest and every response — the create response included — shows each
 * secret as `null`. Unset optional Datadog strings (`ddtags`, `service`, `ddsite`) read back as
 * `''` (the spec types them as strings). `format` reads back exactly as the caller spelled it (`json` or `JSON`).
 */

/** The member names a target may set, in the order the spec lists them. */
export const targetKinds = ['kinesis', 'firehose', 'cloudwatch_logs', 'datadog'] as const;
export type TargetKind = (typeof targetKinds)[number];

/** `arn:aws[-partition]:<service>:<region>:<12-digit account>:<resource prefix><name>`. */
function awsArn(service: string, resourcePrefix: string, example: string) {
  const pattern = new RegExp(`^arn:aws[a-zA-Z-]*:${service}:[a-z0-9-]+:\\d{12}:${resourcePrefix}.+$`);
  return z.string().regex(pattern, `must be an ARN like ${example}`);
}

export const roleArn = z
  .string()
  .regex(
    /^arn:aws[a-zA-Z-]*:iam::\d{12}:role\/.+$/,
    'must be an IAM role ARN like arn:aws:iam::123456789012:role/<name>',
  );

const awsRoleInput = z.strictObject({ role_arn: roleArn });
const awsCredentialsInput = z.strictObject({
  // AWS documents access key ids as 16..128 word characters.
  aws_access_key_id: z
    .string()
    .regex(/^\w{16,128}$/, 'must be an AWS access key id (16 to 128 letters, digits or underscores)'),
  aws_secret_access_key: z.string().min(1, 'must not be empty'),
});

export const awsAuthInput = z
  .strictObject({
    role: awsRoleInput.nullable().optional(),
    creds: awsCredentialsInput.nullable().optional(),
  })
  .superRefine((auth, ctx) => {
    const set = [auth.role, auth.creds].filter((member) => member != null).length;
    if (set !== 1) ctx.addIssue({ code: 'custom', message: 'exactly one of role or creds must be set' });
  })
  .meta({ oneOf: exactlyOneOf(['role', 'creds']) });

const kinesisInput = z.strictObject({
  auth: awsAuthInput,
  stream_arn: awsArn('kinesis', 'stream/', 'arn:aws:kinesis:<region>:<account id>:stream/<name>'),
});
const firehoseInput = z.strictObject({
  auth: awsAuthInput,
  delivery_stream_arn: awsArn(
    'firehose',
    'deliverystream/',
    'arn:aws:firehose:<region>:<account id>:deliverystream/<name>',
  ),
});
const cloudwatchLogsInput = z.strictObject({
  auth: awsAuthInput,
  log_group_arn: awsArn('logs', 'log-group:', 'arn:aws:logs:<region>:<account id>:log-group:<name>'),
});

/** Datadog intake sites, as Datadog documents them. */
export const datadogSites = [
  'datadoghq.com',
  'us3.datadoghq.com',
  'us5.datadoghq.com',
  'datadoghq.eu',
  'ap1.datadoghq.com',
  'ap2.datadoghq.com',
  'ddog-gov.com',
] as const;

// ddtags and service ride along in every log sent: bounded (as the EventDestination CRD bounds them).
const datadogInput = z.strictObject({
  api_key: z.string().min(1, 'must not be empty'),
  ddtags: z.string().max(4096, 'must be at most 4096 characters').nullable().optional(),
  service: z.string().max(255, 'must be at most 255 characters').nullable().optional(),
  ddsite: z.enum(datadogSites).nullable().optional(),
});

export const eventTargetInput = z
  .strictObject({
    kinesis: kinesisInput.nullable().optional(),
    firehose: firehoseInput.nullable().optional(),
    cloudwatch_logs: cloudwatchLogsInput.nullable().optional(),
    datadog: datadogInput.nullable().optional(),
    // The spec names s3 but never shows its fields, so it cannot be validated: refused, by name.
    s3: z
      .unknown()
      .refine(
        () => false,
        's3 targets are not supported; set one of kinesis, firehose, cloudwatch_logs, datadog',
      )
      .optional()
      .meta({ description: 'not supported: any value is refused', not: {} }),
  })
  .superRefine((target, ctx) => {
    const set = targetKinds.filter((kind) => target[kind] != null).length;
    if (set !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: `exactly one of ${targetKinds.join(', ')} must be set`,
      });
    }
  })
  .meta({ oneOf: exactlyOneOf(targetKinds) });
export type EventTargetInput = z.output<typeof eventTargetInput>;

/** Case-insensitively `json`, the only format the spec allows; kept as spelled. */
export const eventFormat = z
  .string()
  .refine((value) => value.toLowerCase() === 'json', "must be 'json', the only supported format")
  .meta({ pattern: '^[Jj][Ss][Oo][Nn]$' });

// Read forms: every member present, unused ones null, secrets always null.
const secretNull = z.null().meta({ description: 'write-only secret: always null in responses' });
const awsAuth = z
  .object({
    role: z.object({ role_arn: z.string() }).nullable(),
    creds: z.object({ aws_access_key_id: z.string(), aws_secret_access_key: secretNull }).nullable(),
  })
  .meta({ id: 'AWSAuth' });
export type AwsAuth = z.infer<typeof awsAuth>;

export const eventTarget = z
  .object({
    kinesis: z.object({ auth: awsAuth, stream_arn: z.string() }).nullable(),
    firehose: z.object({ auth: awsAuth, delivery_stream_arn: z.string() }).nullable(),
    cloudwatch_logs: z.object({ auth: awsAuth, log_group_arn: z.string() }).nullable(),
    datadog: z
      .object({
        api_key: secretNull,
        ddtags: z.string().meta({ description: "'' when unset" }),
        service: z.string().meta({ description: "'' when unset" }),
        ddsite: z.string().meta({ description: "'' when unset" }),
      })
      .nullable(),
  })
  .meta({ id: 'EventTarget' });
export type EventTarget = z.infer<typeof eventTarget>;

export const eventDestination = z
  .object({
    ...describedResourceFields,
    format: z.string(),
    target: eventTarget,
  })
  .meta({ id: 'EventDestination' });
export type EventDestination = z.infer<typeof eventDestination>;

export const eventDestinationCreate = z.strictObject({
  ...describedInputFields,
  format: eventFormat.optional().meta({ description: "'json' (any letter case); default 'json'" }),
  target: eventTargetInput,
});
export type EventDestinationCreate = z.input<typeof eventDestinationCreate>;

/** A given `target` replaces the stored one completely; omitted fields stay as they are. */
export const eventDestinationUpdate = z.strictObject({
  ...describedInputFields,
  format: eventFormat.optional(),
  target: eventTargetInput.optional(),
});
export type EventDestinationUpdate = z.input<typeof eventDestinationUpdate>;

export const eventDestinationList = listOf('event_destinations', eventDestination);
export type EventDestinationList = z.infer<typeof eventDestinationList>;
