import { fromTemporaryCredentials } from '@aws-sdk/credential-providers';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { StoredAwsAuth } from '../../../schemas/event-target-forms.js';
import type { RecordResult, TargetEndpoints } from './delivery-target.js';

/** The parts of an AWS ARN the clients need: `arn:<partition>:<service>:<region>:<account>:<resource>`. */
export function parseArn(arn: string): { region: string; account: string; resource: string } {
  const [prefix, , , region, account, ...rest] = arn.split(':');
  if (prefix !== 'arn' || !region || !account || rest.length === 0) throw new Error(`'${arn}' is not an ARN`);
  return { region, account, resource: rest.join(':') };
}

/**
 * HTTP/1.1 with hard timeouts for every client. The Kinesis client would default to HTTP/2 (for
 * SubscribeToShard, which delivery never uses), which a plain-HTTP endpoint such as a local
 * emulator cannot speak; and without `throwOnRequestTimeout` a request timeout only logs a warning,
 * so a silently dropped connection would hang a send (and hold its lease) for minutes.
 */
function httpHandler(endpoints: TargetEndpoints): NodeHttpHandler {
  return new NodeHttpHandler({
    connectionTimeout: 5000,
    requestTimeout: endpoints.requestTimeoutMs,
    socketTimeout: endpoints.requestTimeoutMs,
    throwOnRequestTimeout: true,
  });
}

/**
 * Credentials of an AWSAuth: the access key as given, or a role assumed through STS. The role's
 * temporary credentials come from the SDK's own provider, whose client caches them and assumes the
 * role again only shortly before they expire; the base identity that assumes it is the server's
 * (the SDK's default chain: environment, web identity, instance profile).
 */
function credentialsFor(
  auth: StoredAwsAuth,
  region: string,
  endpoints: TargetEndpoints,
  sessionName: string,
): { accessKeyId: string; secretAccessKey: string } | ReturnType<typeof fromTemporaryCredentials> {
  if (auth.creds) {
    return { accessKeyId: auth.creds.aws_access_key_id, secretAccessKey: auth.creds.aws_secret_access_key };
  }
  if (!auth.role) throw new Error('AWSAuth has neither role nor creds');
  return fromTemporaryCredentials({
    params: { RoleArn: auth.role.role_arn, RoleSessionName: sessionName, DurationSeconds: 3600 },
    clientConfig: {
      region,
      maxAttempts: 2,
      requestHandler: httpHandler(endpoints),
      ...(endpoints.awsEndpointUrl ? { endpoint: endpoints.awsEndpointUrl } : {}),
    },
  });
}

/** The client settings every AWS target shares (a subset of each client's own config type). */
export interface AwsClientConfig {
  region: string;
  credentials: ReturnType<typeof credentialsFor>;
  maxAttempts: number;
  requestHandler: NodeHttpHandler;
  endpoint?: string;
}

/** What every AWS target's client is built with. Retries are the dispatcher's, with its backoff. */
export function awsClientConfig(
  auth: StoredAwsAuth,
  arn: string,
  endpoints: TargetEndpoints,
  sessionName: string,
): AwsClientConfig {
  const { region } = parseArn(arn);
  return {
    region,
    credentials: credentialsFor(auth, region, endpoints, sessionName),
    maxAttempts: 1,
    requestHandler: httpHandler(endpoints),
    ...(endpoints.awsEndpointUrl ? { endpoint: endpoints.awsEndpointUrl } : {}),
  };
}

/**
 * PutRecords and PutRecordBatch answer one entry per record, in order, with an `ErrorCode` for
 * each record refused (throttling, an internal failure): those are worth another try.
 */
export function perRecordResults(
  count: number,
  entries: { ErrorCode?: string | undefined; ErrorMessage?: string | undefined }[] | undefined,
): RecordResult[] {
  return Array.from({ length: count }, (_, index): RecordResult => {
    const entry = entries?.[index];
    if (entry && !entry.ErrorCode) return { accepted: true };
    return {
      accepted: false,
      error: `${entry?.ErrorCode ?? 'NoResult'}: ${entry?.ErrorMessage ?? 'no result for the record'}`,
    };
  });
}
