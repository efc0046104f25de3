import { describe, expect, it } from 'vitest';
import { createWebhookVerifier, type SignedRequest } from './index.js';

/**
 * Test vectors the providers publish (in their docs, or where noted in their own client
 * libraries' tests), used byte for byte. Stripe, Intercom, LaunchDarkly, Shopify, Xero, Zendesk,
 * Mailgun, Mailchimp and Bitbucket publish no input→signature example; their requests are signed by
 * the documented algorithm in webhook-verification.test.ts instead.
 */

const form = { 'content-type': 'application/x-www-form-urlencoded' };

function request(init: Partial<SignedRequest>): SignedRequest {
  return { method: 'POST', url: 'https://example.com/webhook', headers: {}, body: Buffer.alloc(0), ...init };
}

describe('GitHub', () => {
  // https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
  it('passes the documented example: secret "It\'s a Secret to Everybody", payload "Hello, World!"', async () => {
    const verify = createWebhookVerifier('github', "It's a Secret to Everybody");
    const signed = request({
      headers: {
        'x-hub-signature-256': 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
      },
      body: Buffer.from('Hello, World!'),
    });
    await expect(verify(signed)).resolves.toEqual({ ok: true });
    await expect(verify({ ...signed, body: Buffer.from('Hello, World?') })).resolves.toEqual({
      ok: false,
      reason: 'signature mismatch',
    });
  });
});

describe('Slack', () => {
  // https://api.slack.com/authentication/verifying-requests-from-slack (the worked example)
  const secret = '8f742231b10e8888abcd99yyyzzz85a5';
  const timestamp = '1531420618';
  const body =
    'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
  const signed = request({
    headers: {
      ...form,
      'x-slack-request-timestamp': timestamp,
      'x-slack-signature': 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
    },
    body: Buffer.from(body),
  });

  it('passes the documented example within five minutes of its timestamp', async () => {
    const verify = createWebhookVerifier('slack', secret, { now: () => (Number(timestamp) + 299) * 1000 });
    await expect(verify(signed)).resolves.toEqual({ ok: true });
  });

  it('refuses the same request replayed more than five minutes later', async () => {
    const verify = createWebhookVerifier('slack', secret, { now: () => (Number(timestamp) + 301) * 1000 });
    await expect(verify(signed)).resolves.toEqual({
      ok: false,
      reason: 'timestamp too old: X-Slack-Request-Timestamp is more than 300 s in the past',
    });
  });
});

describe('Twilio', () => {
  // https://www.twilio.com/docs/usage/security#explore-the-algorithm-yourself
  it('passes the documented example: auth token 12345, the Gather POST to myapp.php', async () => {
    const verify = createWebhookVerifier('twilio', '12345');
    const fields = new URLSearchParams([
      ['Digits', '1234'],
      ['To', '+18005551212'],
      ['From', '+14158675310'],
      ['Caller', '+14158675310'],
      ['CallSid', 'CA1234567890ABCDE'],
    ]);
    const signed = request({
      url: 'https://example.com/myapp.php?foo=1&bar=2',
      headers: { ...form, 'x-twilio-signature': 'L/OH5YylLD5NRKLltdqwSvS0BnU=' },
      body: Buffer.from(fields.toString()),
    });
    await expect(verify(signed)).resolves.toEqual({ ok: true });
    fields.set('Digits', '9999');
    await expect(verify({ ...signed, body: Buffer.from(fields.toString()) })).resolves.toEqual({
      ok: false,
      reason: 'signature mismatch',
    });
  });

  // https://www.twilio.com/docs/usage/security#validate-signature-of-request-applicationjson-body:
  // the body and its bodySHA256 are the documented ones. The docs' signature there is made with an
  // auth token they do not show, so this one is made with the token of the example above.
  it('checks a JSON body against the documented bodySHA256 and signs the URL only', async () => {
    const verify = createWebhookVerifier('twilio', '12345');
    const signed = request({
      url: 'https://example.com/myapp?bodySHA256=5ccde7145dfb8f56479710896586cb9d5911809d83afbe34627818790db0aec9',
      headers: { 'content-type': 'application/json', 'x-twilio-signature': 'hPXmLwIy3Fgqv1i9KPmH/HhQ6zo=' },
      body: Buffer.from('{"CallSid":"CA1234567890ABCDE","Caller":"+12349013030"}'),
    });
    await expect(verify(signed)).resolves.toEqual({ ok: true });
    await expect(
      verify({ ...signed, body: Buffer.from('{"CallSid":"CA1234567890ABCDE","Caller":"+10000000000"}') }),
    ).resolves.toEqual({ ok: false, reason: 'body does not match the bodySHA256 query parameter' });
  });
});

describe('CircleCI', () => {
  // https://circleci.com/docs/webhooks/#payload-signature (the table of examples and the Python sample)
  it.each([
    ['hello world', 'secret', '734cc62f32841568f45715aeb9f4d7891324e6d948e4c6c60c0621cdac48623a'],
    ['lalala', 'another-secret', 'daa220016c8f29a8b214fbfc3671aeec2145cfb1e6790184ffb38b6d0425fa00'],
    [
      'an-important-request-payload',
      'hunter123',
      '9be2242094a9a8c00c64306f382a7f9d691de910b4a266f67bd314ef18ac49fa',
    ],
    ['foo', 'secret', '773ba44693c7553d6ee20f61ea5d2757a9a4f4a44d2841ae4e95b52e4cd62db4'],
  ])('passes body %j under secret %j', async (body, secret, signature) => {
    const verify = createWebhookVerifier('circleci', secret);
    await expect(
      verify(request({ headers: { 'circleci-signature': `v1=${signature}` }, body: Buffer.from(body) })),
    ).resolves.toEqual({ ok: true });
    await expect(
      verify(
        request({ headers: { 'circleci-signature': 'v1=not-a-valid-signature' }, body: Buffer.from(body) }),
      ),
    ).resolves.toEqual({ ok: false, reason: 'signature mismatch' });
  });
});

describe('HubSpot (legacy signatures)', () => {
  const secret = 'yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy';
  const verify = createWebhookVerifier('hubspot', secret);

  // https://legacydocs.hubspot.com/docs/faq/v1-request-validation
  it('passes the documented v1 example', async () => {
    const body =
      '[{"eventId":1,"subscriptionId":12345,"portalId":62515,"occurredAt":1564113600000,"subscriptionType":"contact.creation","attemptNumber":0,"objectId":123,"changeSource":"CRM","changeFlag":"NEW","appId":54321}]';
    const signed = request({
      headers: {
        'x-hubspot-signature-version': 'v1',
        'x-hubspot-signature': '232db2615f3d666fe21a8ec971ac7b5402d33b9a925784df3ca654d05f4817de',
      },
      body: Buffer.from(body),
    });
    await expect(verify(signed)).resolves.toEqual({ ok: true });
    await expect(verify({ ...signed, body: Buffer.from(body.replace('62515', '62516')) })).resolves.toEqual({
      ok: false,
      reason: 'signature mismatch',
    });
  });

  // https://legacydocs.hubspot.com/docs/faq/v2-request-validation
  it.each([
    ['GET', '', 'eee2dddcc73c94d699f5e395f4b9d454a069a6855fbfa152e91e88823087200e'],
    [
      'POST',
      '{"example_field":"example_value"}',
      '9569219f8ba981ffa6f6f16aa0f48637d35d728c7e4d93d0d52efaa512af7900',
    ],
  ])('passes the documented v2 example for %s', async (method, body, signature) => {
    const signed = request({
      method,
      url: 'https://www.example.com/webhook_uri',
      headers: { 'x-hubspot-signature-version': 'v2', 'x-hubspot-signature': signature },
      body: Buffer.from(body),
    });
    await expect(verify(signed)).resolves.toEqual({ ok: true });
    await expect(verify({ ...signed, url: 'https://www.example.com/other_uri' })).resolves.toEqual({
      ok: false,
      reason: 'signature mismatch',
    });
  });
});

describe('PagerDuty', () => {
  // PagerDuty's own Go client, webhookv3/webhookv3_test.go (https://github.com/PagerDuty/go-pagerduty);
  // its docs (https://github.com/PagerDuty/developer-docs/blob/main/docs/webhooks/04-Signatures.md) show none.
  const secret = 'lDQHScfUeXUKaQRNF+8XIiDKZ7XX3itBAYzwU0TARw8lJqRnkKl2iB1anSb0Z+IK';
  const body =
    '{"event":{"id":"01BWDWL3NYY7LUFPZCC28QUCMK","event_type":"incident.priority_updated","resource_type":"incident","occurred_at":"2021-04-26T17:36:27.458Z","agent":{"html_url":"https://acme.pagerduty.com/users/PLH1HKV","id":"PLH1HKV","self":"https://api.pagerduty.com/users/PLH1HKV","summary":"Tenex Engineer","type":"user_reference"},"client":null,"data":{"id":"PGR0VU2","type":"incident","self":"https://api.pagerduty.com/incidents/PGR0VU2","html_url":"https://acme.pagerduty.com/incidents/PGR0VU2","number":2,"status":"triggered","title":"A little bump in the road","service":{"html_url":"https://acme.pagerduty.com/services/PF9KMXH","id":"PF9KMXH","self":"https://api.pagerduty.com/services/PF9KMXH","summary":"API Service","type":"service_reference"},"assignees":[{"html_url":"https://acme.pagerduty.com/users/PTUXL6G","id":"PTUXL6G","self":"https://api.pagerduty.com/users/PTUXL6G","summary":"User 123","type":"user_reference"}],"escalation_policy":{"html_url":"https://acme.pagerduty.com/escalation_policies/PUS0KTE","id":"PUS0KTE","self":"https://api.pagerduty.com/escalation_policies/PUS0KTE","summary":"Default","type":"escalation_policy_reference"},"teams":[{"html_url":"https://acme.pagerduty.com/teams/PFCVPS0","id":"PFCVPS0","self":"https://api.pagerduty.com/teams/PFCVPS0","summary":"Engineering","type":"team_reference"}],"priority":{"html_url":"https://acme.pagerduty.com/account/incident_priorities","id":"PSO75BM","self":"https://api.pagerduty.com/priorities/PSO75BM","summary":"P1","type":"priority_reference"},"urgency":"high","conference_bridge":{"conference_number":1000,"conference_url":"https://example.com"},"resolve_reason":null}}}';

  it('passes the valid vector, also among the signatures of other secrets', async () => {
    const verify = createWebhookVerifier('pagerduty', secret);
    const valid = 'v1=0c0b9495b893a39e70d1fea2fe11fbe0a825f88b9f67846f6cc07dd2bc5476cd';
    const other = 'v1=7020c8a7ec668a9b7012bc3dd82e483394b038f4230acc6785efbf2a7d8bcaf5';
    const signed = (signature: string) =>
      request({ headers: { 'x-pagerduty-signature': signature }, body: Buffer.from(body) });
    await expect(verify(signed(valid))).resolves.toEqual({ ok: true });
    await expect(verify(signed(`${other},${valid}`))).resolves.toEqual({ ok: true });
    await expect(verify(signed(other))).resolves.toEqual({ ok: false, reason: 'signature mismatch' });
  });
});

describe('SendGrid', () => {
  // SendGrid's own Node library, packages/eventwebhook/src/eventwebhook.spec.js
  // (https://github.com/sendgrid/sendgrid-nodejs); the docs show the headers but no full example.
  const publicKey =
    'MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEEDr2LjtURuePQzplybdC+u4CwrqDqBaWjcMMsTbhdbcwHBcepxo7yAQGhHPTnlvFYPAZFceEu/1FwCM/QmGUhA==';
  const signature =
    'MEUCIQCtIHJeH93Y+qpYeWrySphQgpNGNr/U+UyUlBkU6n7RAwIgJTz2C+8a8xonZGi6BpSzoQsbVRamr2nlxFDWYNH2j/0=';
  const signed = request({
    headers: {
      'content-type': 'application/json',
      'x-twilio-email-event-webhook-signature': signature,
      'x-twilio-email-event-webhook-timestamp': '1588788367',
    },
    body: Buffer.from('{"category":"example_payload","event":"test_event","message_id":"message_id"}'),
  });

  it('passes the library vector and refuses its negative cases', async () => {
    const verify = createWebhookVerifier('sendgrid', publicKey);
    await expect(verify(signed)).resolves.toEqual({ ok: true });
    await expect(verify({ ...signed, body: Buffer.from('payload') })).resolves.toEqual({
      ok: false,
      reason: 'signature mismatch',
    });
    const badSignature =
      'MEUCIQCtIHJeH93Y+qpYeWrySphQgpNGNr/U+UyUlBkU6n7RAwIgJTz2C+8a8xonZGi6BpSzoQsbVRamr2nlxFDWYNH3j/0=';
    await expect(
      verify({
        ...signed,
        headers: { ...signed.headers, 'x-twilio-email-event-webhook-signature': badSignature },
      }),
    ).resolves.toEqual({ ok: false, reason: 'signature mismatch' });
    await expect(
      verify({
        ...signed,
        headers: { ...signed.headers, 'x-twilio-email-event-webhook-timestamp': 'timestamp' },
      }),
    ).resolves.toEqual({ ok: false, reason: 'signature mismatch' });
  });

  it('refuses it under the library test\'s "invalid key"', async () => {
    const otherKey =
      'MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEqTxd43gyp8IOEto2LdIfjRQrIbsd4SXZkLW6jDutdhXSJCWHw8REntlo7aNDthvj+y7GjUuFDb/R1NGe1OPzpA==';
    await expect(createWebhookVerifier('sendgrid', otherKey)(signed)).resolves.toEqual({
      ok: false,
      reason: 'signature mismatch',
    });
  });

  it('also takes the key as PEM', async () => {
    const pem = `-----BEGIN PUBLIC KEY-----\n${publicKey.match(/.{1,64}/g)?.join('\n')}\n-----END PUBLIC KEY-----\n`;
    await expect(createWebhookVerifier('sendgrid', pem)(signed)).resolves.toEqual({ ok: true });
  });
});

describe('Square', () => {
  // Square's own SDKs' webhook helper tests (e.g. square-nodejs-sdk WebhooksHelper test,
  // https://github.com/square/square-nodejs-sdk); the docs (https://developer.squareup.com/docs/webhooks/step3validate)
  // show the algorithm, not an example.
  const signed = request({
    url: 'https://webhook.site/679a4f3a-dcfa-49ee-bac5-9d0edad886b9',
    headers: {
      'content-type': 'application/json',
      'x-square-hmacsha256-signature': 'GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4=',
    },
    body: Buffer.from(
      '{"merchant_id":"MLEFBHHSJGVHD","type":"webhooks.test_notification","event_id":"ac3ac95b-f97d-458c-a6e6-18981597e05f","created_at":"2022-07-13T20:30:59.037339943Z","data":{"type":"webhooks","id":"bc368e64-01aa-407e-b46e-3231809b1129"}}',
    ),
  });

  it('passes the SDK vector, and only at the notification URL it was signed for', async () => {
    const verify = createWebhookVerifier('square', 'Ibxx_5AKakO-3qeNVR61Dw');
    await expect(verify(signed)).resolves.toEqual({ ok: true });
    await expect(verify({ ...signed, url: 'https://webhook.site/another' })).resolves.toEqual({
      ok: false,
      reason: 'signature mismatch',
    });
  });
});

describe('GitLab signing tokens (Standard Webhooks)', () => {
  // GitLab signs per the Standard Webhooks specification
  // (https://gitlab.com/gitlab-org/gitlab/-/merge_requests/230944); this is that specification's
  // published example (https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md).
  const signed = request({
    headers: {
      'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'webhook-timestamp': '1614265330',
      'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    },
    body: Buffer.from('{"test": 2432232314}'),
  });

  it('passes the specification example, also listed after a rotated-out signature', async () => {
    const verify = createWebhookVerifier('gitlab', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', {
      now: () => 1614265330_000 + 10_000,
    });
    await expect(verify(signed)).resolves.toEqual({ ok: true });
    const both = `v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= ${signed.headers['webhook-signature']}`;
    await expect(
      verify({ ...signed, headers: { ...signed.headers, 'webhook-signature': both } }),
    ).resolves.toEqual({
      ok: true,
    });
    await expect(
      verify({ ...signed, headers: { ...signed.headers, 'webhook-id': 'msg_other' } }),
    ).resolves.toEqual({ ok: false, reason: 'signature mismatch' });
  });

  it('refuses it once the timestamp is more than five minutes old', async () => {
    const verify = createWebhookVerifier('gitlab', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', {
      now: () => 1614265330_000 + 301_000,
    });
    await expect(verify(signed)).resolves.toEqual({
      ok: false,
      reason: 'timestamp too old: webhook-timestamp is more than 300 s in the past',
    });
  });
});
