import { describe, expect, it } from 'vitest';
import { FakeResourceClient } from '../../../../test/support/fake/resource-client.js';
import { SECRET } from '../../runtime/resource-types.js';
import { readSecretValues, type SecretObject, secretsChanged, secretValue } from './secret-values.js';

const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

function secretsOf(stored: Record<string, SecretObject>) {
  const reads: string[] = [];
  const client = new FakeResourceClient<SecretObject>(SECRET, Object.values(stored));
  client.intercept('get', ({ name }) => {
    if (name) reads.push(name);
  });
  return { client, reads };
}

const oauth = {
  metadata: { name: 'oauth', namespace: 'ns', resourceVersion: '7' },
  data: { id: base64('client-id'), secret: base64('s3cret') },
};

describe('readSecretValues', () => {
  it('reads each key by spec path, each Secret once, with its resourceVersion', async () => {
    const { client, reads } = secretsOf({ oauth });
    const result = await readSecretValues(client, 'ns', [
      { field: 'spec.a.clientSecretRef', ref: { name: 'oauth', key: 'secret' } },
      { field: 'spec.b.secretRef', ref: { name: 'oauth', key: 'id' } },
    ]);
    expect(result.ready).toBe(true);
    if (!result.ready) return;
    expect(secretValue(result.value, 'spec.a.clientSecretRef')).toBe('s3cret');
    expect(secretValue(result.value, 'spec.b.secretRef')).toBe('client-id');
    expect(result.value.versions).toEqual({ 'oauth/secret': '7', 'oauth/id': '7' });
    expect(reads).toEqual(['oauth']);
  });

  it('is not ready, naming the field, for a missing Secret or key (the Secret watch brings it back)', async () => {
    const { client } = secretsOf({ oauth });
    expect(
      await readSecretValues(client, 'ns', [{ field: 'spec.x', ref: { name: 'nope', key: 'k' } }]),
    ).toEqual({
      ready: false,
      reason: 'SecretNotFound',
      message: 'spec.x: Secret nope does not exist',
    });
    expect(
      await readSecretValues(client, 'ns', [{ field: 'spec.y', ref: { name: 'oauth', key: 'missing' } }]),
    ).toMatchObject({
      ready: false,
      reason: 'SecretKeyMissing',
      message: expect.stringMatching(/^spec\.y: /),
    });
  });

  it('tells a Secret changed since its values were sent by its resourceVersion', async () => {
    const { client } = secretsOf({ oauth });
    const result = await readSecretValues(client, 'ns', [{ field: 'f', ref: { name: 'oauth', key: 'id' } }]);
    if (!result.ready) throw new Error('expected ready');
    expect(secretsChanged({ 'oauth/id': '7' }, result.value)).toBe(false);
    expect(secretsChanged({ 'oauth/id': '6' }, result.value)).toBe(true);
    // Another key of the same Secret, same resourceVersion: a change all the same.
    expect(secretsChanged({ 'oauth/secret': '7' }, result.value)).toBe(true);
    expect(secretsChanged(undefined, result.value)).toBe(true);
  });
});
