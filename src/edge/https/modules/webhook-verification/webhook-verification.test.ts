import { createHmac, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  createWebhookVerifier,
  MAX_WEBHOOK_BODY_BYTES,
  type SignedRequest,
  type WebhookProvider,
} from './index.js';

/**
 * Every provider but SNS (see sns.test.ts), through the public API: a request signed as the
 * provider's docs say passes; a tampered one, one without its signature and one signed with
 * another secret fail, with a reason that names the failure and leaks neither secret nor signature.
 * Published test vectors are in vectors.test.ts, provider details in providers.test.ts.
 */

const NOW_MS = 1_700_000_000_000;
const NOW_S = String(NOW_MS / 1000);
const URL_CALLED = 'https://hooks.example.com/in?route=1';
const JSON_BODY = Buffer.from('{"event":"something.happened","id":"evt_1","note":"unicode \u00e9"}');

function hmac(algorithm: 'sha1' | 'sha256', key: string | Buffer, ...parts: Array<string | Buffer>): Buffer {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

function request(init: Partial<SignedRequest>): SignedRequest {
  return { method: 'POST', url: URL_CALLED, headers: {}, body: JSON_BODY, ...init };
}

function formBody(fields: Array<[string, string]>): Buffer {
  return Buffer.from(new URLSearchParams(fields).toString());
}

function withoutHeader(signed: SignedRequest, name: string): SignedRequest {
  const headers = { ...signed.headers };
  delete headers[name.toLowerCase()];
  return { ...signed, headers };
}

function appendToBody(signed: SignedRequest, extra: string): SignedRequest {
  return { ...signed, body: Buffer.concat([signed.body, Buffer.from(extra)]) };
}

const ecKey = () => {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return {
    privateKey,
    verificationKey: publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
  };
};
const sendgridKey = ecKey();
const otherSendgridKey = ecKey();
const whsec = (bytes: Buffer) => `whsec_${bytes.toString('base64')}`;

interface Case {
  provider: Exclude<WebhookProvider, 'sns'>;
  secret: string;
  wrongSecret: string;
  /** A request signed with `secret` as the provider signs it. */
  build(secret: string): SignedRequest;
  /** Changes what is signed (default: appends to the body). */
  tamper?: (signed: SignedRequest) => SignedRequest;
  /** Takes the signature away, and the reason that gives. */
  strip: { apply: (signed: SignedRequest) => SignedRequest; reason: string };
}

const mailgunBody = (signature: Record<string, string>) =>
  Buffer.from(JSON.stringify({ signature, 'event-data': { event: 'delivered', id: 'ev-1' } }));
const mailgunSignature = (secret: string, token = 'a'.repeat(50)) => ({
  timestamp: NOW_S,
  token,
  signature: hmac('sha256', secret, NOW_S, token).toString('hex'),
});

const twilioFields: Array<[string, string]> = [
  ['To', '+18005551212'],
  ['From', '+14158675310'],
  ['CallSid', 'CA1234567890ABCDE'],
];
const mailchimpFields: Array<[string, string]> = [['mandrill_events', '[{"event":"send","_id":"m1"}]']];
const formHeaders = { 'content-type': 'application/x-www-form-urlencoded' };

const CASES: Case[] = [
  {
    provider: 'bitbucket',
    secret: 'bitbucket-secret',
    wrongSecret: 'bitbucket-other',
    build: (secret) =>
      request({
        headers: { 'x-hub-signature': `sha256=${hmac('sha256', secret, JSON_BODY).toString('hex')}` },
      }),
    strip: { apply: (r) => withoutHeader(r, 'x-hub-signature'), reason: 'missing header X-Hub-Signature' },
  },
  {
    provider: 'circleci',
    secret: 'circleci-secret',
    wrongSecret: 'circleci-other',
    build: (secret) =>
      request({
        headers: { 'circleci-signature': `v1=${hmac('sha256', secret, JSON_BODY).toString('hex')}` },
      }),
    strip: {
      apply: (r) => withoutHeader(r, 'circleci-signature'),
      reason: 'missing header circleci-signature',
    },
  },
  {
    provider: 'github',
    secret: 'github-secret',
    wrongSecret: 'github-other',
    build: (secret) =>
      request({
        headers: { 'x-hub-signature-256': `sha256=${hmac('sha256', secret, JSON_BODY).toString('hex')}` },
      }),
    strip: {
      apply: (r) => withoutHeader(r, 'x-hub-signature-256'),
      reason: 'missing header X-Hub-Signature-256',
    },
  },
  {
    provider: 'gitlab',
    secret: whsec(randomBytes(32)),
    wrongSecret: whsec(randomBytes(32)),
    build: (secret) => {
      const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
      const signature = hmac('sha256', key, `msg_1.${NOW_S}.`, JSON_BODY).toString('base64');
      return request({
        headers: {
          'webhook-id': 'msg_1',
          'webhook-timestamp': NOW_S,
          'webhook-signature': `v1,${signature}`,
        },
      });
    },
    strip: {
      apply: (r) => withoutHeader(r, 'webhook-signature'),
      reason: 'missing header webhook-signature',
    },
  },
  {
    provider: 'hubspot',
    secret: 'hubspot-client-secret',
    wrongSecret: 'hubspot-other',
    build: (secret) => {
      const timestamp = String(NOW_MS);
      const signature = hmac('sha256', secret, 'POST', URL_CALLED, JSON_BODY, timestamp).toString('base64');
      return request({
        headers: { 'x-hubspot-signature-v3': signature, 'x-hubspot-request-timestamp': timestamp },
      });
    },
    strip: {
      apply: (r) => withoutHeader(r, 'x-hubspot-signature-v3'),
      reason: 'missing header X-HubSpot-Signature-v3',
    },
  },
  {
    provider: 'intercom',
    secret: 'intercom-client-secret',
    wrongSecret: 'intercom-other',
    build: (secret) =>
      request({ headers: { 'x-hub-signature': `sha1=${hmac('sha1', secret, JSON_BODY).toString('hex')}` } }),
    strip: { apply: (r) => withoutHeader(r, 'x-hub-signature'), reason: 'missing header X-Hub-Signature' },
  },
  {
    provider: 'launchdarkly',
    secret: 'launchdarkly-secret',
    wrongSecret: 'launchdarkly-other',
    build: (secret) =>
      request({ headers: { 'x-ld-signature': hmac('sha256', secret, JSON_BODY).toString('hex') } }),
    strip: { apply: (r) => withoutHeader(r, 'x-ld-signature'), reason: 'missing header X-LD-Signature' },
  },
  {
    provider: 'mailchimp',
    secret: 'mandrill-webhook-key',
    wrongSecret: 'mandrill-other',
    build: (secret) => {
      const [[name, value]] = mailchimpFields as [[string, string]];
      const signature = hmac('sha1', secret, URL_CALLED, name, value).toString('base64');
      return request({
        headers: { ...formHeaders, 'x-mandrill-signature': signature },
        body: formBody(mailchimpFields),
      });
    },
    tamper: (r) => appendToBody(r, '&extra=1'),
    strip: {
      apply: (r) => withoutHeader(r, 'x-mandrill-signature'),
      reason: 'missing header X-Mandrill-Signature',
    },
  },
  {
    provider: 'mailgun',
    secret: 'mailgun-signing-key',
    wrongSecret: 'mailgun-other',
    build: (secret) =>
      request({
        headers: { 'content-type': 'application/json' },
        body: mailgunBody(mailgunSignature(secret)),
      }),
    // Mailgun signs the timestamp and token only: tampering means changing one of them.
    tamper: (r) => ({ ...r, body: Buffer.from(r.body.toString().replace('"token":"a', '"token":"b')) }),
    strip: {
      apply: (r) => ({ ...r, body: Buffer.from(r.body.toString().replace('"signature":"', '"signatur":"')) }),
      reason: 'missing signature.signature in the body',
    },
  },
  {
    provider: 'pagerduty',
    secret: 'pagerduty-secret',
    wrongSecret: 'pagerduty-other',
    build: (secret) =>
      request({
        headers: { 'x-pagerduty-signature': `v1=${hmac('sha256', secret, JSON_BODY).toString('hex')}` },
      }),
    strip: {
      apply: (r) => withoutHeader(r, 'x-pagerduty-signature'),
      reason: 'missing header X-PagerDuty-Signature',
    },
  },
  {
    provider: 'sendgrid',
    secret: sendgridKey.verificationKey,
    wrongSecret: otherSendgridKey.verificationKey,
    // Signing needs the private key: the case signs with the key pair `secret` belongs to.
    build: (secret) => {
      const key = secret === sendgridKey.verificationKey ? sendgridKey : otherSendgridKey;
      const signature = sign('sha256', Buffer.concat([Buffer.from(NOW_S), JSON_BODY]), key.privateKey);
      return request({
        headers: {
          'x-twilio-email-event-webhook-signature': signature.toString('base64'),
          'x-twilio-email-event-webhook-timestamp': NOW_S,
        },
      });
    },
    strip: {
      apply: (r) => withoutHeader(r, 'x-twilio-email-event-webhook-signature'),
      reason: 'missing header X-Twilio-Email-Event-Webhook-Signature',
    },
  },
  {
    provider: 'shopify',
    secret: 'shopify-client-secret',
    wrongSecret: 'shopify-other',
    build: (secret) =>
      request({ headers: { 'x-shopify-hmac-sha256': hmac('sha256', secret, JSON_BODY).toString('base64') } }),
    strip: {
      apply: (r) => withoutHeader(r, 'x-shopify-hmac-sha256'),
      reason: 'missing header X-Shopify-Hmac-Sha256',
    },
  },
  {
    provider: 'slack',
    secret: 'slack-signing-secret',
    wrongSecret: 'slack-other',
    build: (secret) =>
      request({
        headers: {
          'x-slack-signature': `v0=${hmac('sha256', secret, `v0:${NOW_S}:`, JSON_BODY).toString('hex')}`,
          'x-slack-request-timestamp': NOW_S,
        },
      }),
    strip: {
      apply: (r) => withoutHeader(r, 'x-slack-signature'),
      reason: 'missing header X-Slack-Signature',
    },
  },
  {
    provider: 'square',
    secret: 'square-signature-key',
    wrongSecret: 'square-other',
    build: (secret) =>
      request({
        headers: {
          'x-square-hmacsha256-signature': hmac('sha256', secret, URL_CALLED, JSON_BODY).toString('base64'),
        },
      }),
    strip: {
      apply: (r) => withoutHeader(r, 'x-square-hmacsha256-signature'),
      reason: 'missing header x-square-hmacsha256-signature',
    },
  },
  {
    provider: 'stripe',
    secret: 'whsec_stripe_endpoint_secret',
    wrongSecret: 'whsec_stripe_other',
    build: (secret) =>
      request({
        headers: {
          'stripe-signature': `t=${NOW_S},v1=${hmac('sha256', secret, `${NOW_S}.`, JSON_BODY).toString('hex')}`,
        },
      }),
    strip: { apply: (r) => withoutHeader(r, 'stripe-signature'), reason: 'missing header Stripe-Signature' },
  },
  {
    provider: 'twilio',
    secret: 'twilio-auth-token',
    wrongSecret: 'twilio-other',
    build: (secret) => {
      const sorted = [...twilioFields].sort(([a], [b]) => (a < b ? -1 : 1));
      const signature = hmac('sha1', secret, URL_CALLED, ...sorted.flat()).toString('base64');
      return request({
        headers: { ...formHeaders, 'x-twilio-signature': signature },
        body: formBody(twilioFields),
      });
    },
    tamper: (r) => appendToBody(r, '&Digits=9'),
    strip: {
      apply: (r) => withoutHeader(r, 'x-twilio-signature'),
      reason: 'missing header X-Twilio-Signature',
    },
  },
  {
    provider: 'xero',
    secret: 'xero-webhook-key',
    wrongSecret: 'xero-other',
    build: (secret) =>
      request({ headers: { 'x-xero-signature': hmac('sha256', secret, JSON_BODY).toString('base64') } }),
    strip: { apply: (r) => withoutHeader(r, 'x-xero-signature'), reason: 'missing header x-xero-signature' },
  },
  {
    provider: 'zendesk',
    secret: 'zendesk-signing-secret',
    wrongSecret: 'zendesk-other',
    build: (secret) => {
      const timestamp = '2023-11-14T22:13:20Z';
      return request({
        headers: {
          'x-zendesk-webhook-signature': hmac('sha256', secret, timestamp, JSON_BODY).toString('base64'),
          'x-zendesk-webhook-signature-timestamp': timestamp,
        },
      });
    },
    strip: {
      apply: (r) => withoutHeader(r, 'x-zendesk-webhook-signature'),
      reason: 'missing header X-Zendesk-Webhook-Signature',
    },
  },
];

const verifierFor = (testCase: Case, secret = testCase.secret) =>
  createWebhookVerifier(testCase.provider, secret, { now: () => NOW_MS });

/** What a reason must never contain: the secrets and the signatures (header values) of a valid request. */
function secretsOf(testCase: Case, valid: SignedRequest): string[] {
  const headerValues = Object.values(valid.headers).filter(
    (value): value is string => typeof value === 'string',
  );
  return [testCase.secret, testCase.wrongSecret, ...headerValues.filter((value) => value.length >= 16)];
}

describe('every provider with a secret', () => {
  it('covers all providers but sns', () => {
    expect(CASES.map((testCase) => testCase.provider).sort()).toEqual([
      'bitbucket',
      'circleci',
      'github',
      'gitlab',
      'hubspot',
      'intercom',
      'launchdarkly',
      'mailchimp',
      'mailgun',
      'pagerduty',
      'sendgrid',
      'shopify',
      'slack',
      'square',
      'stripe',
      'twilio',
      'xero',
      'zendesk',
    ]);
  });

  describe.each(CASES)('$provider', (testCase) => {
    it('passes a request signed as documented', async () => {
      await expect(verifierFor(testCase)(testCase.build(testCase.secret))).resolves.toEqual({ ok: true });
    });

    it('refuses a tampered request', async () => {
      const valid = testCase.build(testCase.secret);
      const tampered = (testCase.tamper ?? ((r: SignedRequest) => appendToBody(r, ' ')))(valid);
      await expect(verifierFor(testCase)(tampered)).resolves.toEqual({
        ok: false,
        reason: 'signature mismatch',
      });
    });

    it('refuses a request without its signature, naming what is missing', async () => {
      const valid = testCase.build(testCase.secret);
      const verdict = await verifierFor(testCase)(testCase.strip.apply(valid));
      expect(verdict).toEqual({ ok: false, reason: testCase.strip.reason });
    });

    it('refuses a request signed with another secret, leaking neither secret nor signature', async () => {
      const valid = testCase.build(testCase.secret);
      const forged = testCase.build(testCase.wrongSecret);
      const verdict = await verifierFor(testCase)(forged);
      expect(verdict).toEqual({ ok: false, reason: 'signature mismatch' });
      // And the other way round: the verifier of the other secret refuses the genuine request.
      await expect(verifierFor(testCase, testCase.wrongSecret)(valid)).resolves.toMatchObject({ ok: false });
      for (const bad of [
        forged,
        testCase.strip.apply(valid),
        (testCase.tamper ?? ((r) => appendToBody(r, ' ')))(valid),
      ]) {
        const { reason = '' } = (await verifierFor(testCase)(bad)) as { reason?: string };
        for (const secret of secretsOf(testCase, valid)) expect(reason).not.toContain(secret);
      }
    });
  });
});

describe('createWebhookVerifier', () => {
  it('refuses to build a verifier without a secret, except for sns', () => {
    expect(() => createWebhookVerifier('github', null)).toThrow("webhook provider 'github' needs a secret");
    expect(() => createWebhookVerifier('stripe', '')).toThrow("webhook provider 'stripe' needs a secret");
    expect(() => createWebhookVerifier('sns', null)).not.toThrow();
    expect(() => createWebhookVerifier('nope' as WebhookProvider, 's')).toThrow(
      'unknown webhook provider "nope"',
    );
  });

  it('refuses a secret of the wrong form when the verifier is built, without echoing it', () => {
    expect(() => createWebhookVerifier('sendgrid', 'not-a-key')).toThrow(
      'the sendgrid secret must be the Event Webhook verification key (a public key)',
    );
    expect(() => createWebhookVerifier('gitlab', 'whsec_***')).toThrow(
      'the gitlab signing token must be whsec_ followed by base64',
    );
  });

  it('refuses a body larger than MAX_WEBHOOK_BODY_BYTES without looking at it', async () => {
    expect(MAX_WEBHOOK_BODY_BYTES).toBe(10 * 1024 * 1024);
    const github = CASES.find((testCase) => testCase.provider === 'github') as Case;
    const big = { ...github.build(github.secret), body: Buffer.alloc(MAX_WEBHOOK_BODY_BYTES + 1) };
    await expect(verifierFor(github)(big)).resolves.toEqual({
      ok: false,
      reason: `body larger than ${MAX_WEBHOOK_BODY_BYTES} bytes`,
    });
  });

  it('reads header names case-insensitively through lower-cased keys and joins repeated fields', async () => {
    const github = CASES.find((testCase) => testCase.provider === 'github') as Case;
    const valid = github.build(github.secret);
    const value = valid.headers['x-hub-signature-256'] as string;
    // Node gives a repeated header joined; an array (as for set-cookie) is joined the same way.
    await expect(
      verifierFor(github)({ ...valid, headers: { 'x-hub-signature-256': [value] } }),
    ).resolves.toEqual({
      ok: true,
    });
  });
});
