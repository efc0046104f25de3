import {
  anyMatch,
  decodeHex,
  FIVE_MINUTES_S,
  fail,
  header,
  hmac,
  keyValueList,
  missingHeader,
  OK,
  outsideTolerance,
  parseUnixTime,
  SIGNATURE_MISMATCH,
} from '../shared.js';
import type { ProviderCheck, ProviderContext } from '../types.js';

const HEADER = 'Stripe-Signature';

/**
 * Stripe: `Stripe-Signature: t=<unix s>,v1=<hex>[,v1=<hex>...][,v0=...]`, each v1 the HMAC-SHA256 of
 * `<t>.<body>` under one active endpoint secret. Other schemes (v0 is a test-mode decoy) are ignored
 * against downgrades; `t` must be within 5 minutes, the tolerance of Stripe's libraries.
 * https://stripe.com/docs/webhooks/signatures#verify-manually
 */
export function stripeCheck(secret: string, context: ProviderContext): ProviderCheck {
  return (request) => {
    const value = header(request, HEADER);
    if (value === undefined) return missingHeader(HEADER);
    const items = keyValueList(value);
    const timestamps = items.filter(([key]) => key === 't');
    const signatures = items.filter(([key]) => key === 'v1').map(([, signature]) => decodeHex(signature));
    if (timestamps.length !== 1) return fail(`malformed header ${HEADER}: expected one t=<timestamp>`);
    const timestamp = timestamps[0]?.[1] ?? '';
    const seconds = parseUnixTime(timestamp);
    if (seconds === undefined) return fail(`malformed header ${HEADER}: t is not a Unix time`);
    if (signatures.length === 0) return fail(`malformed header ${HEADER}: no v1 signature`);
    const stale = outsideTolerance(seconds * 1000, context.now(), FIVE_MINUTES_S, `${HEADER} t`);
    if (stale !== undefined) return fail(stale);
    const expected = hmac('sha256', secret, `${timestamp}.`, request.body);
    return anyMatch([expected], signatures) ? OK : fail(SIGNATURE_MISMATCH);
  };
}
