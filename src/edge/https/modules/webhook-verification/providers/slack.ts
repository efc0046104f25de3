import {
  anyMatch,
  decodeHex,
  FIVE_MINUTES_S,
  fail,
  header,
  hmac,
  missingHeader,
  OK,
  outsideTolerance,
  parseUnixTime,
  SIGNATURE_MISMATCH,
} from '../shared.js';
import type { ProviderCheck, ProviderContext } from '../types.js';

const SIGNATURE = 'X-Slack-Signature';
const TIMESTAMP = 'X-Slack-Request-Timestamp';

/**
 * Slack: `X-Slack-Signature: v0=<hex HMAC-SHA256(signing secret, "v0:<timestamp>:<body>")>`, the
 * timestamp from `X-Slack-Request-Timestamp`, which must be within 5 minutes of now.
 * https://api.slack.com/authentication/verifying-requests-from-slack
 */
export function slackCheck(secret: string, context: ProviderContext): ProviderCheck {
  return (request) => {
    const signature = header(request, SIGNATURE);
    const timestamp = header(request, TIMESTAMP)?.trim();
    if (signature === undefined) return missingHeader(SIGNATURE);
    if (timestamp === undefined) return missingHeader(TIMESTAMP);
    const seconds = parseUnixTime(timestamp);
    if (seconds === undefined) return fail(`malformed header ${TIMESTAMP}: not a Unix time`);
    const trimmed = signature.trim();
    if (!trimmed.startsWith('v0=')) return fail(`malformed header ${SIGNATURE}: expected v0=<signature>`);
    const provided = decodeHex(trimmed.slice(3));
    if (provided === undefined) return fail(`malformed header ${SIGNATURE}: not hex`);
    const stale = outsideTolerance(seconds * 1000, context.now(), FIVE_MINUTES_S, TIMESTAMP);
    if (stale !== undefined) return fail(stale);
    const expected = hmac('sha256', secret, `v0:${timestamp}:`, request.body);
    return anyMatch([expected], [provided]) ? OK : fail(SIGNATURE_MISMATCH);
  };
}
