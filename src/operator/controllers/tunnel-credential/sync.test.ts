import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { EdgewardClient } from '../../../client/index.js';
import type { Credential } from '../../../schemas/credentials.js';
import type { Informer } from '../../runtime/informer.js';
import type { ResourceClient } from '../../runtime/resource-client.js';
import type { BotUserObject } from '../bot-user/sync.js';
import type { SecretObject } from '../secret-values.js';
import { type TunnelCredentialObject, tunnelCredentialSync } from './sync.js';

/** Unit test of the token-Secret decisions only; the e2e test proves them on a real cluster. */

const UID = 'uid-1';
const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

function credentialObject(annotations: Record<string, string> = {}, id?: string): TunnelCredentialObject {
  return {
    metadata: { name: 'agent', namespace: 'ns', uid: UID, generation: 1, annotations },
    spec: {},
    status: id ? { id } : undefined,
  } as TunnelCredentialObject;
}

function ownedSecret(credentialId: string, token: string, storedToken = token): SecretObject {
  return {
    metadata: {
      name: 'agent-token',
      ownerReferences: [
        { apiVersion: 'edgeward.dev/v1alpha1', kind: 'TunnelCredential', name: 'agent', uid: UID },
      ],
      annotations: { 'edgeward.dev/credential-id': credentialId, 'edgeward.dev/token-sha256': sha256(token) },
    },
    data: { token: base64(storedToken) },
  };
}

function syncWith(secret: SecretObject | undefined) {
  const secrets = {
    async get() {
      if (!secret) throw Object.assign(new Error('not found'), { code: 404 });
      return secret;
    },
  } as unknown as ResourceClient<SecretObject>;
  return tunnelCredentialSync({
    api: {} as EdgewardClient,
    secrets,
    bots: { cache: { get: () => undefined } } as unknown as Informer<BotUserObject>,
  });
}

const remote = { id: 'cr_1' } as Credential;

async function replacementReason(object: TunnelCredentialObject, secret: SecretObject | undefined) {
  const sync = syncWith(secret);
  const resolution = await sync.resolve(object, {} as never);
  if (!resolution.ready) return `not ready: ${resolution.reason}`;
  return sync.needsReplacement?.(object, resolution.value, remote);
}

describe('TunnelCredential token Secret decisions', () => {
  it('keeps a credential whose Secret holds its intact token', async () => {
    expect(
      await replacementReason(credentialObject({}, 'cr_1'), ownedSecret('cr_1', 'ewt_a')),
    ).toBeUndefined();
  });

  it('replaces when the Secret is gone, edited, or holds another credential (an unfinished replacement)', async () => {
    const object = credentialObject({}, 'cr_1');
    expect(await replacementReason(object, undefined)).toMatch(/is gone/);
    expect(await replacementReason(object, ownedSecret('cr_1', 'ewt_a', 'ewt_edited'))).toMatch(
      /was changed/,
    );
    expect(await replacementReason(object, ownedSecret('cr_2', 'ewt_b'))).toMatch(/holds the token of cr_2/);
  });

  it('refuses a foreign Secret, and waits for the token when adopting', async () => {
    const foreign: SecretObject = { metadata: { name: 'agent-token' }, data: { token: base64('mine') } };
    expect(await replacementReason(credentialObject({}, 'cr_1'), foreign)).toBe('not ready: SecretConflict');
    const adopting = credentialObject({ 'edgeward.dev/adopt-id': 'cr_1' });
    expect(await replacementReason(adopting, undefined)).toBe('not ready: TokenUnavailable');
    const empty: SecretObject = { metadata: { name: 'agent-token' }, data: {} };
    expect(await replacementReason(adopting, empty)).toBe('not ready: TokenUnavailable');
    const sync = syncWith(foreign);
    const resolution = await sync.resolve(adopting, {} as never);
    expect(resolution.ready && resolution.value.secret.state).toBe('adoptable');
  });
});
