import { fromTemporaryCredentials } from '@aws-sdk/credential-providers';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { StoredAwsAuth } from '../stored-target.js';
import type { TargetEndpoints } from './delivery-target.js';

/** The parts of an AWS ARN the clients need: `arn:<partition>:<service>:<region>:<account>:<resource>`. */
export function parseArn(arn: string): { region: string; account: string; resource: string } {
  const [prefix, , , region, account, ...rest] = arn.split(':');
  if (prefix !== 'arn' || !region || !account || rest.length === 0) throw new Error(`'${arn}' is not an ARN`);
  return { region, account, resource: rest.join(':') };
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
    clientConfig: { region, ...(endpoints.awsEndpointUrl ? { endpoint: endpoints.awsEndpointUrl } : {}) },
  });
}

/**
 * What every AWS target's client is built with. Retries are the dispatcher's, with its backoff.
 * HTTP/1.1 for every client: the Kinesis client defaults to HTTP/2 (for SubscribeToShard, which
 * delivery never uses), which a plain-HTTP endpoint such as a local emulator cannot speak.
 */
export function awsClientConfig(
  auth: StoredAwsAuth,
  arn: string,
  endpoints: TargetEndpoints,
  sessionName: string,
) {
  const { region } = parseArn(arn);
  return {
    region,
    credentials: credentialsFor(auth, region, endpoints, sessionName),
    maxAttempts: 1,
    requestHandler: new NodeHttpHandler({
      requestTimeout: endpoints.requestTimeoutMs,
      connectionTimeout: 5000,
    }),
    ...(endpoints.awsEndpointUrl ? { endpoint: endpoints.awsEndpointUrl } : {}),
  };
}
