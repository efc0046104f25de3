import { sign } from 'node:crypto';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { type GeneratedCertificate, selfSignedCertificate } from '../../../../crypto/x509.js';
import { createWebhookVerifier, isSnsSigningCertUrl, type SignedRequest } from './index.js';
import { fetchSnsCertificate } from './providers/sns.js';

/**
 * SNS messages signed by a key of our own, its self-signed certificate served by an injected
 * fetcher in place of the service's. The fields and their order are those of
 * https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html.
 */

const CERT_URL = 'https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0000000000000000000000.pem';

let signer: GeneratedCertificate;
let other: GeneratedCertificate;
beforeAll(async () => {
  signer = await selfSignedCertificate({ commonName: 'sns.amazonaws.com', validDays: 2, keyType: 'rsa' });
  other = await selfSignedCertificate({ commonName: 'sns.amazonaws.com', validDays: 2, keyType: 'rsa' });
});

type Fields = Record<string, string>;

const NOTIFICATION: Fields = {
  Type: 'Notification',
  MessageId: '22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324',
  TopicArn: 'arn:aws:sns:us-east-1:123456789012:MyTopic',
  Subject: 'My First Message',
  Message: 'Hello world!\nSecond line, with "quotes" and unicode \u00e9',
  Timestamp: '2012-05-02T00:54:06.655Z',
  UnsubscribeURL: 'https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=arn',
};

const CONFIRMATION: Fields = {
  Type: 'SubscriptionConfirmation',
  MessageId: '165545c9-2a5c-472c-8df2-7ff2be2b3b1b',
  Token:
    '2336412f37fb687f5d51e6e241d09c805a5a57b30d712f794cc5f6a988666d92768dd60a747ba6f3beb71854e285d6ad02428b09ceece29417f1f02d609c582afbacc99c583a916b9981dd2728f4ae6fdb82efd087cc3b7849e05798d2d2785c03b0879594eeac82c01f235d0e717736',
  TopicArn: 'arn:aws:sns:us-east-1:123456789012:MyTopic',
  Message: 'You have chosen to subscribe to the topic arn:aws:sns:us-east-1:123456789012:MyTopic.',
  SubscribeURL: 'https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=arn&Token=2336',
  Timestamp: '2012-04-26T20:45:04.751Z',
};

const SIGNED_ORDER: Record<string, string[]> = {
  Notification: ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type'],
  SubscriptionConfirmation: [
    'Message',
    'MessageId',
    'SubscribeURL',
    'Timestamp',
    'Token',
    'TopicArn',
    'Type',
  ],
  UnsubscribeConfirmation: ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'],
};

/** The message as SNS sends it: fields, SignatureVersion, Signature and SigningCertURL. */
function snsMessage(
  fields: Fields,
  version: '1' | '2' = '2',
  key = signer.privateKeyPem,
  certUrl = CERT_URL,
): Fields {
  const order = SIGNED_ORDER[fields.Type as string] ?? [];
  const text = order
    .filter((name) => fields[name] !== undefined)
    .map((name) => `${name}\n${fields[name]}\n`)
    .join('');
  const signature = sign(version === '1' ? 'sha1' : 'sha256', Buffer.from(text), key).toString('base64');
  return { ...fields, SignatureVersion: version, Signature: signature, SigningCertURL: certUrl };
}

function post(message: Fields): SignedRequest {
  return {
    method: 'POST',
    url: 'https://hooks.example.com/sns',
    headers: { 'content-type': 'text/plain; charset=UTF-8', 'x-amz-sns-message-type': message.Type },
    body: Buffer.from(JSON.stringify(message)),
  };
}

function verifierServing(pem: () => string) {
  const fetchSnsCertificate = vi.fn(async (_url: string) => pem());
  return { fetchSnsCertificate, verify: createWebhookVerifier('sns', null, { fetchSnsCertificate }) };
}

describe('sns', () => {
  it.each(['1', '2'] as const)('passes a Notification signed with SignatureVersion %s', async (version) => {
    const { verify, fetchSnsCertificate } = verifierServing(() => signer.certificatePem);
    await expect(verify(post(snsMessage(NOTIFICATION, version)))).resolves.toEqual({ ok: true });
    expect(fetchSnsCertificate).toHaveBeenCalledWith(CERT_URL);
  });

  it('passes a Notification without Subject, which is then not signed', async () => {
    const { verify } = verifierServing(() => signer.certificatePem);
    const { Subject: _, ...withoutSubject } = NOTIFICATION;
    await expect(verify(post(snsMessage(withoutSubject)))).resolves.toEqual({ ok: true });
  });

  it('passes SubscriptionConfirmation and UnsubscribeConfirmation messages', async () => {
    const { verify } = verifierServing(() => signer.certificatePem);
    await expect(verify(post(snsMessage(CONFIRMATION)))).resolves.toEqual({ ok: true });
    const unsubscribe = { ...CONFIRMATION, Type: 'UnsubscribeConfirmation' };
    await expect(verify(post(snsMessage(unsubscribe, '1')))).resolves.toEqual({ ok: true });
  });

  it('refuses a tampered message, whichever signed field changed', async () => {
    const { verify } = verifierServing(() => signer.certificatePem);
    const message = snsMessage(NOTIFICATION);
    for (const name of ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn']) {
      await expect(verify(post({ ...message, [name]: `${message[name]}!` }))).resolves.toEqual({
        ok: false,
        reason: 'signature mismatch',
      });
    }
    const confirmation = snsMessage(CONFIRMATION);
    await expect(
      verify(post({ ...confirmation, SubscribeURL: 'https://attacker.example/?Action=ConfirmSubscription' })),
    ).resolves.toEqual({ ok: false, reason: 'signature mismatch' });
  });

  it('refuses a message signed by another key than the certificate', async () => {
    const { verify } = verifierServing(() => signer.certificatePem);
    await expect(verify(post(snsMessage(NOTIFICATION, '2', other.privateKeyPem)))).resolves.toEqual({
      ok: false,
      reason: 'signature mismatch',
    });
  });

  it('refuses a message that does not say it is signed, without fetching anything', async () => {
    const { verify, fetchSnsCertificate } = verifierServing(() => signer.certificatePem);
    const { Signature: _, ...unsigned } = snsMessage(NOTIFICATION);
    await expect(verify(post(unsigned))).resolves.toEqual({
      ok: false,
      reason: 'missing Signature in the message',
    });
    await expect(verify(post({ ...snsMessage(NOTIFICATION), SignatureVersion: '3' }))).resolves.toEqual({
      ok: false,
      reason: 'unsupported SignatureVersion: expected "1" or "2"',
    });
    await expect(
      verify({ ...post(NOTIFICATION), body: Buffer.from('raw message delivery') }),
    ).resolves.toEqual({
      ok: false,
      reason: 'body is not an SNS message (not JSON)',
    });
    const { TopicArn: __, ...noTopic } = snsMessage(NOTIFICATION);
    await expect(verify(post(noTopic))).resolves.toEqual({
      ok: false,
      reason: 'missing TopicArn in the message',
    });
    expect(fetchSnsCertificate).not.toHaveBeenCalled();
  });

  it.each([
    ['a foreign host', 'https://attacker.example/SimpleNotificationService-1.pem'],
    ['a host that only starts like SNS', 'https://sns.us-east-1.amazonaws.com.attacker.example/cert.pem'],
    ['a host that only ends like SNS', 'https://evilsns.us-east-1.amazonaws.com/cert.pem'],
    ['another service of the cloud provider', 'https://s3.us-east-1.amazonaws.com/bucket/cert.pem'],
    ['plain http', 'http://sns.us-east-1.amazonaws.com/SimpleNotificationService-1.pem'],
    ['a path not ending .pem', 'https://sns.us-east-1.amazonaws.com/SimpleNotificationService-1.der'],
    [
      'a query after the .pem path',
      'https://sns.us-east-1.amazonaws.com/SimpleNotificationService-1.pem?x=1',
    ],
    ['a non-default port', 'https://sns.us-east-1.amazonaws.com:8443/SimpleNotificationService-1.pem'],
    ['credentials in the URL', 'https://user@sns.us-east-1.amazonaws.com/SimpleNotificationService-1.pem'],
  ])('refuses a SigningCertURL on %s without fetching it', async (_what, certUrl) => {
    const { verify, fetchSnsCertificate } = verifierServing(() => signer.certificatePem);
    await expect(verify(post(snsMessage(NOTIFICATION, '2', signer.privateKeyPem, certUrl)))).resolves.toEqual(
      {
        ok: false,
        reason: 'SigningCertURL is not an https://sns.<region>.amazonaws.com[.cn]/... .pem URL',
      },
    );
    expect(fetchSnsCertificate).not.toHaveBeenCalled();
  });

  it('accepts the certificate URLs the docs allow, China regions included', () => {
    expect(isSnsSigningCertUrl(CERT_URL)).toBe(true);
    expect(
      isSnsSigningCertUrl('https://sns.cn-north-1.amazonaws.com.cn/SimpleNotificationService-1.pem'),
    ).toBe(true);
    expect(
      isSnsSigningCertUrl('https://sns.us-gov-west-1.amazonaws.com/SimpleNotificationService-1.pem'),
    ).toBe(true);
    expect(isSnsSigningCertUrl('not a url')).toBe(false);
  });

  it('has a default fetcher that refuses any other URL itself, before any request', async () => {
    await expect(
      fetchSnsCertificate('https://attacker.example/SimpleNotificationService-1.pem'),
    ).rejects.toThrow('not an SNS signing certificate URL');
  });

  it('says when the certificate cannot be had or is not one', async () => {
    const failing = createWebhookVerifier('sns', null, {
      fetchSnsCertificate: async () => {
        throw new Error('GET answered 404');
      },
    });
    await expect(failing(post(snsMessage(NOTIFICATION)))).resolves.toEqual({
      ok: false,
      reason: 'could not get the signing certificate: GET answered 404',
    });
    const { verify } = verifierServing(() => 'not a certificate');
    await expect(verify(post(snsMessage(NOTIFICATION)))).resolves.toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^could not get the signing certificate: /),
    });
  });

  it('refuses a certificate outside its validity period', async () => {
    const fetchSnsCertificate = async () => signer.certificatePem;
    const later = createWebhookVerifier('sns', null, {
      fetchSnsCertificate,
      now: () => Date.now() + 3 * 24 * 60 * 60 * 1000,
    });
    await expect(later(post(snsMessage(NOTIFICATION)))).resolves.toEqual({
      ok: false,
      reason: 'the signing certificate has expired',
    });
    const earlier = createWebhookVerifier('sns', null, {
      fetchSnsCertificate,
      now: () => Date.now() - 60 * 60 * 1000,
    });
    await expect(earlier(post(snsMessage(NOTIFICATION)))).resolves.toEqual({
      ok: false,
      reason: 'the signing certificate is not valid yet',
    });
  });

  it('refuses a message whose x-amz-sns-message-type header contradicts its Type', async () => {
    const { verify } = verifierServing(() => signer.certificatePem);
    const request = post(snsMessage(NOTIFICATION));
    await expect(
      verify({
        ...request,
        headers: { ...request.headers, 'x-amz-sns-message-type': 'SubscriptionConfirmation' },
      }),
    ).resolves.toEqual({
      ok: false,
      reason: 'header x-amz-sns-message-type does not match the message Type',
    });
  });

  it('ignores a secret given for sns', async () => {
    const verify = createWebhookVerifier('sns', 'ignored', {
      fetchSnsCertificate: async () => signer.certificatePem,
    });
    await expect(verify(post(snsMessage(NOTIFICATION)))).resolves.toEqual({ ok: true });
  });
});
