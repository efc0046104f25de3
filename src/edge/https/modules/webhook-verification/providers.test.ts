import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createWebhookVerifier, type SignedRequest } from './index.js';
import { multipartFields } from './multipart.js';
import { hubspotV3Uri } from './providers/hubspot.js';

/** Details of single providers beyond the common cases of webhook-verification.test.ts. */

const NOW_MS = 1_700_000_000_000;
const NOW_S = NOW_MS / 1000;
const now = () => NOW_MS;
const BODY = Buffer.from('{"id":"evt_1"}');
const form = { 'content-type': 'application/x-www-form-urlencoded' };

function hmac(algorithm: 'sha1' | 'sha256', key: string, ...parts: Array<string | Buffer>): Buffer {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

function request(init: Partial<SignedRequest>): SignedRequest {
  return { method: 'POST', url: 'https://hooks.example.com/in', headers: {}, body: BODY, ...init };
}

const mismatch = { ok: false, reason: 'signature mismatch' };

describe('stripe', () => {
  const secret = 'whsec_test';
  const verify = createWebhookVerifier('stripe', secret, { now });
  const v1 = (t: number, key = secret) => hmac('sha256', key, `${t}.`, BODY).toString('hex');
  const signed = (value: string) => request({ headers: { 'stripe-signature': value } });

  it('passes when any v1 matches (several while a secret is rolled) and ignores v0', async () => {
    const header = `t=${NOW_S},v1=${v1(NOW_S, 'whsec_old')},v1=${v1(NOW_S)},v0=6ffbb59b2300aae63f272406069a9788598b792a944a07aba816edb039989a39`;
    await expect(verify(signed(header))).resolves.toEqual({ ok: true });
  });

  it('does not take a v0 (test-mode) signature in place of v1', async () => {
    await expect(verify(signed(`t=${NOW_S},v0=${v1(NOW_S)}`))).resolves.toEqual({
      ok: false,
      reason: 'malformed header Stripe-Signature: no v1 signature',
    });
  });

  it('refuses a timestamp more than five minutes away, either way, even when signed', async () => {
    const old = NOW_S - 301;
    await expect(verify(signed(`t=${old},v1=${v1(old)}`))).resolves.toEqual({
      ok: false,
      reason: 'timestamp too old: Stripe-Signature t is more than 300 s in the past',
    });
    const ahead = NOW_S + 301;
    await expect(verify(signed(`t=${ahead},v1=${v1(ahead)}`))).resolves.toEqual({
      ok: false,
      reason: 'timestamp in the future: Stripe-Signature t is more than 300 s ahead',
    });
    const recent = NOW_S - 299;
    await expect(verify(signed(`t=${recent},v1=${v1(recent)}`))).resolves.toEqual({ ok: true });
  });

  it('refuses a header without a usable t', async () => {
    await expect(verify(signed(`v1=${v1(NOW_S)}`))).resolves.toEqual({
      ok: false,
      reason: 'malformed header Stripe-Signature: expected one t=<timestamp>',
    });
    await expect(verify(signed(`t=soon,v1=${v1(NOW_S)}`))).resolves.toEqual({
      ok: false,
      reason: 'malformed header Stripe-Signature: t is not a Unix time',
    });
  });

  it('binds the signature to t: the same v1 under another t fails', async () => {
    await expect(verify(signed(`t=${NOW_S - 1},v1=${v1(NOW_S)}`))).resolves.toEqual(mismatch);
  });
});

describe('slack', () => {
  it('refuses a malformed signature or timestamp', async () => {
    const verify = createWebhookVerifier('slack', 's', { now });
    await expect(
      verify(
        request({ headers: { 'x-slack-signature': 'v1=00', 'x-slack-request-timestamp': String(NOW_S) } }),
      ),
    ).resolves.toEqual({ ok: false, reason: 'malformed header X-Slack-Signature: expected v0=<signature>' });
    await expect(
      verify(
        request({ headers: { 'x-slack-signature': 'v0=00', 'x-slack-request-timestamp': 'yesterday' } }),
      ),
    ).resolves.toEqual({ ok: false, reason: 'malformed header X-Slack-Request-Timestamp: not a Unix time' });
    await expect(verify(request({ headers: { 'x-slack-signature': 'v0=00' } }))).resolves.toEqual({
      ok: false,
      reason: 'missing header X-Slack-Request-Timestamp',
    });
  });
});

describe('github', () => {
  const secret = 'gh';
  const verify = createWebhookVerifier('github', secret);
  const sha256 = `sha256=${hmac('sha256', secret, BODY).toString('hex')}`;
  const sha1 = `sha1=${hmac('sha1', secret, BODY).toString('hex')}`;

  it('falls back to X-Hub-Signature (sha1) only when X-Hub-Signature-256 is absent', async () => {
    await expect(verify(request({ headers: { 'x-hub-signature': sha1 } }))).resolves.toEqual({ ok: true });
    await expect(
      verify(
        request({ headers: { 'x-hub-signature-256': `sha256=${'0'.repeat(64)}`, 'x-hub-signature': sha1 } }),
      ),
    ).resolves.toEqual(mismatch);
    await expect(
      verify(request({ headers: { 'x-hub-signature-256': sha256, 'x-hub-signature': 'sha1=00' } })),
    ).resolves.toEqual({ ok: true });
  });

  it('names a malformed header and accepts upper-case hex', async () => {
    await expect(verify(request({ headers: { 'x-hub-signature-256': 'md5=00' } }))).resolves.toEqual({
      ok: false,
      reason: 'malformed header X-Hub-Signature-256: expected sha256=<signature>',
    });
    await expect(verify(request({ headers: { 'x-hub-signature-256': 'sha256=xyz' } }))).resolves.toEqual({
      ok: false,
      reason: 'malformed header X-Hub-Signature-256: not hex',
    });
    await expect(
      verify(request({ headers: { 'x-hub-signature-256': `sha256=${sha256.slice(7).toUpperCase()}` } })),
    ).resolves.toEqual({ ok: true });
  });
});

describe('gitlab with a secret token (X-Gitlab-Token)', () => {
  const verify = createWebhookVerifier('gitlab', 'my-gitlab-token');

  it('compares the token, never echoing either', async () => {
    await expect(verify(request({ headers: { 'x-gitlab-token': 'my-gitlab-token' } }))).resolves.toEqual({
      ok: true,
    });
    await expect(verify(request({ headers: { 'x-gitlab-token': 'my-gitlab-tokem' } }))).resolves.toEqual({
      ok: false,
      reason: 'X-Gitlab-Token does not match the secret token',
    });
    await expect(verify(request({}))).resolves.toEqual({
      ok: false,
      reason: 'missing header X-Gitlab-Token',
    });
  });
});

describe('hubspot v3', () => {
  const secret = 'hubspot-secret';
  const verify = createWebhookVerifier('hubspot', secret, { now });

  it('decodes the escapes the docs list in the signed URI, and only those', () => {
    expect(hubspotV3Uri('https://example.com/hook%3Fa?x=%3a%2F%40%21%24%27%28%29%2A%2C%3B%20%26%3D')).toBe(
      "https://example.com/hook?a?x=:/@!$'()*,;%20%26%3D",
    );
  });

  it('signs method + decoded URI + body + timestamp', async () => {
    const url = 'https://example.com/hook?email=a%40example.com';
    const timestamp = String(NOW_MS - 1000);
    const signature = hmac(
      'sha256',
      secret,
      'POST',
      'https://example.com/hook?email=a@example.com',
      BODY,
      timestamp,
    );
    const signed = request({
      url,
      headers: {
        'x-hubspot-signature-v3': signature.toString('base64'),
        'x-hubspot-request-timestamp': timestamp,
      },
    });
    await expect(verify(signed)).resolves.toEqual({ ok: true });
    await expect(verify({ ...signed, method: 'PUT' })).resolves.toEqual(mismatch);
  });

  it('refuses a request older than five minutes', async () => {
    const timestamp = String(NOW_MS - 300_001);
    const signature = hmac('sha256', secret, 'POST', 'https://hooks.example.com/in', BODY, timestamp);
    await expect(
      verify(
        request({
          headers: {
            'x-hubspot-signature-v3': signature.toString('base64'),
            'x-hubspot-request-timestamp': timestamp,
          },
        }),
      ),
    ).resolves.toEqual({
      ok: false,
      reason: 'timestamp too old: X-HubSpot-Request-Timestamp is more than 300 s in the past',
    });
  });

  it('needs the version of a legacy signature', async () => {
    await expect(verify(request({ headers: { 'x-hubspot-signature': 'ab' } }))).resolves.toEqual({
      ok: false,
      reason: 'missing header X-HubSpot-Signature-Version',
    });
    await expect(
      verify(request({ headers: { 'x-hubspot-signature': 'ab', 'x-hubspot-signature-version': 'v9' } })),
    ).resolves.toEqual({ ok: false, reason: 'unsupported X-HubSpot-Signature-Version "v9"' });
  });
});

describe('twilio', () => {
  const token = 'twilio-token';
  const verify = createWebhookVerifier('twilio', token);
  const params = new URLSearchParams([
    ['To', '+18005551212'],
    ['Body', 'hello world'],
    ['MediaUrl', 'b'],
    ['MediaUrl', 'a'],
  ]);
  // Names sorted, each name's values sorted, as Twilio's helper libraries sign.
  const signedParams = 'Bodyhello worldMediaUrlaMediaUrlbTo+18005551212';

  it('signs the URL and the sorted POST fields, repeated fields included', async () => {
    const url = 'https://hooks.example.com/sms?x=1';
    const signature = hmac('sha1', token, url, signedParams).toString('base64');
    const signed = request({
      url,
      headers: { ...form, 'x-twilio-signature': signature },
      body: Buffer.from(params.toString()),
    });
    await expect(verify(signed)).resolves.toEqual({ ok: true });
    await expect(verify({ ...signed, url: 'https://hooks.example.com/sms?x=2' })).resolves.toEqual(mismatch);
  });

  it('tries the URL with and without the default port, as Twilio signs either', async () => {
    const signature = hmac('sha1', token, 'https://hooks.example.com:443/sms', signedParams).toString(
      'base64',
    );
    const signed = request({
      url: 'https://hooks.example.com/sms',
      headers: { ...form, 'x-twilio-signature': signature },
      body: Buffer.from(params.toString()),
    });
    await expect(verify(signed)).resolves.toEqual({ ok: true });
    const withoutPort = hmac('sha1', token, 'https://hooks.example.com/sms', signedParams).toString('base64');
    await expect(
      verify({
        ...signed,
        url: 'https://hooks.example.com:443/sms',
        headers: { ...form, 'x-twilio-signature': withoutPort },
      }),
    ).resolves.toEqual({ ok: true });
  });

  it('signs only the URL of a GET (its parameters are in the query)', async () => {
    const url = 'https://hooks.example.com/voice?CallSid=CA1&From=%2B1415';
    const signature = hmac('sha1', token, url).toString('base64');
    await expect(
      verify(
        request({ method: 'GET', url, headers: { 'x-twilio-signature': signature }, body: Buffer.alloc(0) }),
      ),
    ).resolves.toEqual({ ok: true });
  });

  it('uses HMAC-SHA256 when a Webhooks Rule says so', async () => {
    const url = 'https://hooks.example.com/sms';
    const signature = hmac('sha256', token, url, signedParams).toString('base64');
    const signed = request({
      url,
      headers: {
        ...form,
        'x-twilio-signature': signature,
        'x-twilio-webhooks-signature-settings': 'key=KS123,algorithm=HMAC_SHA256',
      },
      body: Buffer.from(params.toString()),
    });
    await expect(verify(signed)).resolves.toEqual({ ok: true });
    await expect(
      verify({
        ...signed,
        headers: { ...signed.headers, 'x-twilio-webhooks-signature-settings': 'algorithm=MD5' },
      }),
    ).resolves.toEqual({
      ok: false,
      reason: 'unsupported algorithm in header X-Twilio-Webhooks-Signature-Settings',
    });
  });
});

describe('mailgun', () => {
  const key = 'mailgun-key';
  const verify = createWebhookVerifier('mailgun', key);
  const token = 't'.repeat(50);
  const timestamp = String(NOW_S);
  const signature = hmac('sha256', key, timestamp, token).toString('hex');

  it('reads the fields of a form-encoded post (legacy webhooks, routes)', async () => {
    const body = new URLSearchParams({ timestamp, token, signature, 'body-plain': 'hi' }).toString();
    await expect(verify(request({ headers: form, body: Buffer.from(body) }))).resolves.toEqual({ ok: true });
  });

  it('reads the fields of a multipart post (routes forwarding attachments)', async () => {
    const boundary = '----mailgun-boundary';
    const part = (name: string, value: string, extra = '') =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${extra}\r\n\r\n${value}\r\n`;
    const body = Buffer.from(
      part('attachment-1', 'timestamp=1', '; filename="timestamp"') +
        part('timestamp', timestamp) +
        part('token', token) +
        part('signature', signature) +
        `--${boundary}--\r\n`,
    );
    const headers = { 'content-type': `multipart/form-data; boundary="${boundary}"` };
    await expect(verify(request({ headers, body }))).resolves.toEqual({ ok: true });
    expect(multipartFields(body, boundary).get('timestamp')).toBe(timestamp);
  });

  it('takes the parent-signature of a subaccount event under the primary account key', async () => {
    const primary = createWebhookVerifier('mailgun', 'primary-key');
    const body = JSON.stringify({
      signature: {
        timestamp: Number(timestamp),
        token,
        signature,
        'parent-signature': hmac('sha256', 'primary-key', timestamp, token).toString('hex'),
      },
    });
    await expect(
      primary(request({ headers: { 'content-type': 'application/json' }, body: Buffer.from(body) })),
    ).resolves.toEqual({
      ok: true,
    });
  });

  it('names what is wrong with the body', async () => {
    await expect(verify(request({ headers: { 'content-type': 'text/plain' } }))).resolves.toEqual({
      ok: false,
      reason: 'unsupported content type "text/plain": expected JSON or form data',
    });
    await expect(
      verify(
        request({ headers: { 'content-type': 'application/json' }, body: Buffer.from('{"event-data":{}}') }),
      ),
    ).resolves.toEqual({ ok: false, reason: 'missing signature object in the body' });
  });
});

describe('mailchimp', () => {
  it('sorts the POST fields by name and signs them after the URL', async () => {
    const key = 'mandrill-key';
    const url = 'https://hooks.example.com/mandrill';
    const body = new URLSearchParams([
      ['mandrill_events', '[]'],
      ['a_field', '1'],
    ]).toString();
    const signature = hmac('sha1', key, url, 'a_field', '1', 'mandrill_events', '[]').toString('base64');
    const verify = createWebhookVerifier('mailchimp', key);
    await expect(
      verify(
        request({ url, headers: { ...form, 'x-mandrill-signature': signature }, body: Buffer.from(body) }),
      ),
    ).resolves.toEqual({ ok: true });
    await expect(
      verify(
        request({
          url: `${url}/`,
          headers: { ...form, 'x-mandrill-signature': signature },
          body: Buffer.from(body),
        }),
      ),
    ).resolves.toEqual(mismatch);
  });
});

describe('square', () => {
  it('falls back to the legacy HMAC-SHA1 x-square-signature', async () => {
    const key = 'square-key';
    const signature = hmac('sha1', key, 'https://hooks.example.com/in', BODY).toString('base64');
    const verify = createWebhookVerifier('square', key);
    await expect(verify(request({ headers: { 'x-square-signature': signature } }))).resolves.toEqual({
      ok: true,
    });
    await expect(
      verify(request({ headers: { 'x-square-signature': signature }, body: Buffer.from('{}') })),
    ).resolves.toEqual(mismatch);
  });
});

describe('xero', () => {
  // The "intent to receive" probe of https://developer.xero.com/documentation/webhooks/configuring-your-server
  it('passes a correctly signed intent-to-receive payload and refuses an incorrectly signed one', async () => {
    const key = 'xero-webhook-key';
    const body = Buffer.from(
      '{"events":[],"lastEventSequence":0,"firstEventSequence":0,"entropy":"S0m3r4Nd0mt3xt"}',
    );
    const verify = createWebhookVerifier('xero', key);
    const good = hmac('sha256', key, body).toString('base64');
    await expect(verify(request({ headers: { 'x-xero-signature': good }, body }))).resolves.toEqual({
      ok: true,
    });
    const bad = hmac('sha256', 'not-the-key', body).toString('base64');
    await expect(verify(request({ headers: { 'x-xero-signature': bad }, body }))).resolves.toEqual(mismatch);
  });
});

describe('zendesk', () => {
  // The static secret Zendesk signs test deliveries with (https://developer.zendesk.com/documentation/webhooks/verifying/);
  // Zendesk publishes no signature for it, so this one is computed as documented.
  it('verifies a body-less request under the documented test secret', async () => {
    const secret = 'dGhpc19zZWNyZXRfaXNfZm9yX3Rlc3Rpbmdfb25seQ==';
    const timestamp = '2021-03-25T05:09:27Z';
    const signature = hmac('sha256', secret, timestamp).toString('base64');
    const verify = createWebhookVerifier('zendesk', secret);
    const signed = request({
      method: 'GET',
      headers: {
        'x-zendesk-webhook-signature': signature,
        'x-zendesk-webhook-signature-timestamp': timestamp,
      },
      body: Buffer.alloc(0),
    });
    await expect(verify(signed)).resolves.toEqual({ ok: true });
    await expect(
      verify({
        ...signed,
        headers: { ...signed.headers, 'x-zendesk-webhook-signature-timestamp': '2021-03-25T05:09:28Z' },
      }),
    ).resolves.toEqual(mismatch);
  });
});

describe('multipartFields', () => {
  it('keeps the first value of a name and ends at the closing delimiter', () => {
    const body = Buffer.from(
      '--b\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--b\r\ncontent-disposition: form-data; name="a"\r\n\r\n2\r\n--b--\r\n',
    );
    expect([...multipartFields(body, 'b')]).toEqual([['a', '1']]);
    expect([...multipartFields(Buffer.from('no parts here'), 'b')]).toEqual([]);
  });
});
