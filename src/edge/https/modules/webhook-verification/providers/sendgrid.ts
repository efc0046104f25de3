import { createPublicKey, type KeyObject, verify } from 'node:crypto';
import { decodeBase64, fail, header, missingHeader, OK, SIGNATURE_MISMATCH } from '../shared.js';
import type { ProviderCheck } from '../types.js';

const SIGNATURE = 'X-Twilio-Email-Event-Webhook-Signature';
const TIMESTAMP = 'X-Twilio-Email-Event-Webhook-Timestamp';

/** The verification key as SendGrid shows it (base64 DER SubjectPublicKeyInfo), or a PEM public key. */
export function sendgridPublicKey(secret: string): KeyObject {
  try {
    if (secret.includes('-----BEGIN')) return createPublicKey(secret);
    const der = decodeBase64(secret.replace(/\s+/g, ''));
    if (der === undefined) throw new Error('not base64');
    return createPublicKey({ key: der, format: 'der', type: 'spki' });
  } catch (error) {
    throw new Error('the sendgrid secret must be the Event Webhook verification key (a public key)', {
      cause: error,
    });
  }
}

/**
 * SendGrid (Signed Event Webhook): `X-Twilio-Email-Event-Webhook-Signature` is a base64 DER ECDSA
 * (P-256, SHA-256) signature of `<X-Twilio-Email-Event-Webhook-Timestamp> + body`; the "secret" is
 * the public verification key. The docs give no tolerance for the timestamp, so none is enforced.
 * https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features
 */
export function sendgridCheck(secret: string): ProviderCheck {
  const key = sendgridPublicKey(secret);
  return (request) => {
    const signature = header(request, SIGNATURE);
    const timestamp = header(request, TIMESTAMP);
    if (signature === undefined) return missingHeader(SIGNATURE);
    if (timestamp === undefined) return missingHeader(TIMESTAMP);
    const provided = decodeBase64(signature);
    if (provided === undefined) return fail(`malformed header ${SIGNATURE}: not base64`);
    const signed = Buffer.concat([Buffer.from(timestamp, 'utf8'), request.body]);
    return verifies(signed, key, provided) ? OK : fail(SIGNATURE_MISMATCH);
  };
}

function verifies(signed: Buffer, key: KeyObject, signature: Buffer): boolean {
  try {
    return verify('sha256', signed, key, signature);
  } catch {
    return false; // OpenSSL throws on a signature that is not DER at all
  }
}
