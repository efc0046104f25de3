import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fakeEdgewardClient } from '../../../../test/support/fake/edgeward-client.js';
import { FakeInformer } from '../../../../test/support/fake/informer.js';
import { FakeResourceClient } from '../../../../test/support/fake/resource-client.js';
import type { Credential } from '../../../schemas/credentials.js';
import { SECRET } from '../../runtime/resource-types.js';
import type { BotUserObject } from '../bot-user/sync.js';
import type { SecretObject } from '../shared/secret-values.js';
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
      namespace: 'ns',
      ownerReferences: [
        { apiVersion: 'edgeward.dev/v1alpha1', kind: 'TunnelCredential', name: 'agent', uid: UID },
      ],
      annotations: { 'edgeward.dev/credential-id': credentialId, 'edgeward.dev/token-sha256': sha256(token) },
    },
    data: { token: base64(storedToken) },
  };
}

function syncWith(secret: SecretObject | undefined) {
  return syncOver(secretsHolding(secret));
}

function secretsHolding(secret: SecretObject | undefined) {
  return new FakeResourceClient<SecretObject>(SECRET, secret ? [secret] : []);
}

/** The sync over a fake Secret client; no server calls are expected, no BotUser is named. */
function syncOver(secrets: FakeResourceClient<SecretObject>) {
  return tunnelCredentialSync({
    api: fakeEdgewardClient(),
    secrets,
    bots: new FakeInformer<BotUserObject>(),
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
    const foreign: SecretObject = {
      metadata: { name: 'agent-token', namespace: 'ns' },
      data: { token: base64('mine') },
    };
    expect(await replacementReason(credentialObject({}, 'cr_1'), foreign)).toBe('not ready: SecretConflict');
    const adopting = credentialObject({ 'edgeward.dev/adopt-id': 'cr_1' });
    expect(await replacementReason(adopting, undefined)).toBe('not ready: TokenUnavailable');
    const empty: SecretObject = { metadata: { name: 'agent-token', namespace: 'ns' }, data: {} };
    expect(await replacementReason(adopting, empty)).toBe('not ready: TokenUnavailable');
    const sync = syncWith(foreign);
    const resolution = await sync.resolve(adopting, {} as never);
    expect(resolution.ready && resolution.value.secret.state).toBe('adoptable');
  });

  it('moves the token to a renamed Secret instead of replacing the credential', async () => {
    const secrets = secretsHolding(ownedSecret('cr_1', 'ewt_a'));
    const writes: string[] = [];
    secrets.intercept('*', ({ verb, name }) => {
      if (verb !== 'get') writes.push(`${verb} ${name}`);
    });
    const sync = syncOver(secrets);
    const object = {
      ...credentialObject({}, 'cr_1'),
      spec: { tokenSecretName: 'renamed' },
      status: { id: 'cr_1', tokenSecretName: 'agent-token' },
    } as TunnelCredentialObject;
    const resolution = await sync.resolve(object, {} as never);
    if (!resolution.ready) throw new Error(`not ready: ${resolution.reason}`);
    expect(sync.needsReplacement?.(object, resolution.value, remote)).toBeUndefined();
    await sync.update(object, resolution.value, {
      ...remote,
      description: '',
      metadata: '',
      acl: [],
    } as Credential);
    expect(writes).toEqual(['create renamed']);
    const moved = secrets.stored('ns', 'renamed');
    expect(Buffer.from(moved?.data?.token ?? '', 'base64').toString()).toBe('ewt_a');
    expect(moved?.metadata?.annotations?.['edgeward.dev/credential-id']).toBe('cr_1');
  });

  it('takes no Secret over when the adopted credential has another owner', async () => {
    const replaced: string[] = [];
    const foreign: SecretObject = {
      metadata: { name: 'agent-token', namespace: 'ns' },
      data: { token: base64('mine') },
    };
    const secrets = secretsHolding(foreign);
    secrets.intercept('replace', ({ name }) => {
      replaced.push(name ?? '');
    });
    const sync = syncOver(secrets);
    const adopting = {
      ...credentialObject({ 'edgeward.dev/adopt-id': 'cr_1' }),
      spec: { ownerId: 'bot_mine' },
    } as TunnelCredentialObject;
    const resolution = await sync.resolve(adopting, {} as never);
    if (!resolution.ready) throw new Error(`not ready: ${resolution.reason}`);
    await expect(
      sync.update(adopting, resolution.value, { ...remote, owner_id: 'bot_other' } as Credential),
    ).rejects.toThrow(/is owned by bot_other/);
    expect(replaced).toEqual([]);
  });

  it('releases its Secret (no ownerReference, no managed-by label) when orphaning the credential', async () => {
    const owned = ownedSecret('cr_1', 'ewt_a');
    owned.metadata = {
      ...owned.metadata,
      labels: { 'app.kubernetes.io/managed-by': 'edgeward-operator', keep: 'me' },
    };
    const secrets = secretsHolding(owned);
    const sync = syncOver(secrets);
    await sync.orphan?.(credentialObject({}, 'cr_1'));
    const stored = secrets.stored('ns', 'agent-token')!;
    expect(stored.metadata?.ownerReferences).toEqual([]);
    expect(stored.metadata?.labels).toEqual({ keep: 'me' });
    expect(Buffer.from(stored.data?.token ?? '', 'base64').toString()).toBe('ewt_a');
  });
});
