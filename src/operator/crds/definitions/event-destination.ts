import { z } from 'zod';
import { datadogSites } from '../../../schemas/event-destinations.js';
import { exactlyOne, withRules } from '../cel.js';
import { describedSpecFields, secretKeyRef, secretVersionsStatusField, statusFields } from '../common.js';
import { defineKind } from '../crd-definition.js';

/** `arn:aws[-partition]:<service>:<region>:<12-digit account>:<resource prefix><name>`. */
function awsArn(service: string, resourcePrefix: string, example: string) {
  return z
    .string()
    .max(2048)
    .regex(new RegExp(`^arn:aws[a-zA-Z-]*:${service}:[a-z0-9-]+:[0-9]{12}:${resourcePrefix}.+$`))
    .meta({ description: `ARN, e.g. ${example}` });
}

const awsAuth = withRules(
  z.object({
    role: z
      .object({
        roleArn: z
          .string()
          .max(2048)
          .regex(/^arn:aws[a-zA-Z-]*:iam::[0-9]{12}:role\/.+$/)
          .meta({ description: 'IAM role the service assumes, e.g. arn:aws:iam::123456789012:role/<name>' }),
      })
      .optional(),
    creds: z
      .object({
        awsAccessKeyId: z
          .string()
          .max(128)
          .regex(/^\w{16,128}$/)
          .meta({ description: 'AWS access key id' }),
        awsSecretAccessKeyRef: secretKeyRef.meta({
          description: 'the Secret key holding the AWS secret access key',
        }),
      })
      .optional(),
  }),
  exactlyOne('role', 'creds'),
);

const target = withRules(
  z.object({
    kinesis: z
      .object({
        auth: awsAuth,
        streamArn: awsArn('kinesis', 'stream/', 'arn:aws:kinesis:<region>:<account>:stream/<name>'),
      })
      .optional(),
    firehose: z
      .object({
        auth: awsAuth,
        deliveryStreamArn: awsArn(
          'firehose',
          'deliverystream/',
          'arn:aws:firehose:<region>:<account>:deliverystream/<name>',
        ),
      })
      .optional(),
    cloudwatchLogs: z
      .object({
        auth: awsAuth,
        logGroupArn: awsArn('logs', 'log-group:', 'arn:aws:logs:<region>:<account>:log-group:<name>'),
      })
      .optional(),
    datadog: z
      .object({
        apiKeySecretRef: secretKeyRef.meta({ description: 'the Secret key holding the Datadog API key' }),
        ddtags: z.string().max(4096).optional(),
        service: z.string().max(255).optional(),
        ddsite: z.enum(datadogSites).optional(),
      })
      .optional(),
  }),
  exactlyOne('kinesis', 'firehose', 'cloudwatchLogs', 'datadog'),
);

export const eventDestinationSpec = z.object({
  ...describedSpecFields,
  format: z
    .enum(['json', 'JSON'])
    .optional()
    .meta({ description: 'serialization format: json (the default and only one)' }),
  target: target.meta({ description: 'where events go: exactly one member set' }),
});
export type EventDestinationSpec = z.output<typeof eventDestinationSpec>;

export const eventDestinationStatus = z.object({ ...statusFields, ...secretVersionsStatusField });
export type EventDestinationStatus = z.output<typeof eventDestinationStatus>;

export const eventDestinationKind = defineKind({
  kind: 'EventDestination',
  plural: 'eventdestinations',
  shortNames: ['ed'],
  description:
    'EventDestination is where and how account events are sent: Kinesis, Firehose, CloudWatch Logs or Datadog.',
  spec: eventDestinationSpec,
  status: eventDestinationStatus,
});
