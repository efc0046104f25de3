import {
  anyMatch,
  decodeBase64,
  FIVE_MINUTES_S,
  fail,
  header,
  hmac,
  missingHeader,
  OK,
  outsideTolerance,
  parseUnixTime,
  SIGNATURE_MISMATCH,
  sameSecret,
} from '../shared.js';
import type { ProviderCheck, ProviderContext } from '../types.js';

const TOKEN = 'X-Gitlab-Token';
const SIGNING_TOKEN_PREFIX = 'whsec_';

/**
 * GitLab, in one of its two documented ways, told apart by the secret:
 * - a secret token (any string): GitLab sends it verbatim in `X-Gitlab-Token`, compared in
 *   constant time (https://docs.gitlab.com/ee/user/project/integrations/webhooks.html#validate-payloads-by-using-a-secret-token);
 * - a signing token (`whsec_<base64 key>`): Standard Webhooks signatures, `webhook-signature:
 *   v1,<base64 HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<body>")>` (space-separated
 *   when several), the timestamp within 5 minutes
 *   (https://gitlab.com/gitlab-org/gitlab/-/merge_requests/230944, https://www.standardwebhooks.com/).
 */
export function gitlabCheck(secret: string, context: ProviderContext): ProviderCheck {
  if (!secret.startsWith(SIGNING_TOKEN_PREFIX)) {
    return (request) => {
      const token = header(request, TOKEN);
      if (token === undefined) return missingHeader(TOKEN);
      return sameSecret(token, secret) ? OK : fail(`${TOKEN} does not match the secret token`);
    };
  }
  const key = decodeBase64(secret.slice(SIGNING_TOKEN_PREFIX.length));
  if (key === undefined || key.length === 0) {
    throw new Error('the gitlab signing token must be whsec_ followed by base64');
  }
  return standardWebhooksCheck(key, context);
}

const ID = 'webhook-id';
const TIMESTAMP = 'webhook-timestamp';
const SIGNATURE = 'webhook-signature';

function standardWebhooksCheck(key: Buffer, context: ProviderContext): ProviderCheck {
  return (request) => {
    const id = header(request, ID);
    const timestamp = header(request, TIMESTAMP)?.trim();
    const signatures = header(request, SIGNATURE);
    if (id === undefined) return missingHeader(ID);
    if (timestamp === undefined) return missingHeader(TIMESTAMP);
    if (signatures === undefined) return missingHeader(SIGNATURE);
    const seconds = parseUnixTime(timestamp);
    if (seconds === undefined) return fail(`malformed header ${TIMESTAMP}: not a Unix time`);
    const provided = signatures
      .split(' ')
      .filter((item) => item.startsWith('v1,'))
      .map((item) => decodeBase64(item.slice(3)));
    if (provided.length === 0) return fail(`malformed header ${SIGNATURE}: no v1 signature`);
    const stale = outsideTolerance(seconds * 1000, context.now(), FIVE_MINUTES_S, TIMESTAMP);
    if (stale !== undefined) return fail(stale);
    const expected = hmac('sha256', key, `${id}.${timestamp}.`, request.body);
    return anyMatch([expected], provided) ? OK : fail(SIGNATURE_MISMATCH);
  };
}
