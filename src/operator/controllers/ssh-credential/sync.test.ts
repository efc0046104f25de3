import { describe, expect, it } from 'vitest';
import { fakeEdgewardClient } from '../../../../test/support/fake/edgeward-client.js';
import { FakeInformer } from '../../../../test/support/fake/informer.js';
import type { SshCredential } from '../../../schemas/ssh-credentials.js';
import type { BotUserObject } from '../bot-user/sync.js';
import { type SshCredentialObject, sshCredentialSync } from './sync.js';

/** Unit test of the owner and immutable-field decisions; the e2e test covers the server round trip. */

const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl a@b';
const OTHER_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHzb0C1m7c3VPJdbxhbbl7oXzgGvHHFbmdVt0F0nCQ9x';

const credential = (spec: Partial<SshCredentialObject['spec']>) =>
  ({
    metadata: { name: 'agent', namespace: 'ns', uid: 'uid-1', generation: 1 },
    spec: { publicKey: KEY, ...spec },
  }) as SshCredentialObject;

const remote: SshCredential = {
  id: 'sshcr_1',
  uri: '/ssh_credentials/sshcr_1',
  created_at: '2030-01-01T00:00:00Z',
  description: '',
  metadata: '',
  public_key: KEY.split(' ').slice(0, 2).join(' '),
  acl: [],
  owner_id: 'bot_1',
};

function syncWith(bot: BotUserObject | undefined) {
  const patches: unknown[] = [];
  const api = fakeEdgewardClient(({ method, path, body }) => {
    if (method !== 'PATCH' || path !== `/ssh_credentials/${remote.id}`) return undefined;
    patches.push(body);
    return { status: 200, body: remote };
  });
  const bots = new FakeInformer<BotUserObject>(bot ? [bot] : []);
  return { sync: sshCredentialSync({ api, bots }), patches };
}

const readyBot: BotUserObject = {
  metadata: { name: 'bot', namespace: 'ns' },
  spec: { active: true, deletionPolicy: 'Delete' },
  status: {
    id: 'bot_1',
    conditions: [{ type: 'Ready', status: 'True', reason: 'Created', message: '', lastTransitionTime: '' }],
  },
};

describe('SSHCredential decisions', () => {
  it('waits for its BotUser owner to be Ready, then uses its id', async () => {
    const object = credential({ ownerRef: { name: 'bot' } });
    expect(await syncWith(undefined).sync.resolve(object, {} as never)).toMatchObject({
      ready: false,
      reason: 'ReferenceNotReady',
    });
    expect(await syncWith(readyBot).sync.resolve(object, {} as never)).toEqual({
      ready: true,
      value: { ownerId: 'bot_1' },
    });
  });

  it('patches only what differs, and refuses another key or owner (fixed at creation)', async () => {
    const { sync, patches } = syncWith(undefined);
    expect(await sync.update(credential({}), { ownerId: undefined }, remote)).toMatchObject({
      changed: false,
    });
    await sync.update(credential({ acl: ['*'] }), { ownerId: 'bot_1' }, remote);
    expect(patches).toEqual([{ acl: ['*'] }]);
    await expect(
      sync.update(credential({ publicKey: OTHER_KEY }), { ownerId: undefined }, remote),
    ).rejects.toMatchObject({
      reason: 'InvalidSpec',
    });
    await expect(sync.update(credential({}), { ownerId: 'bot_2' }, remote)).rejects.toMatchObject({
      reason: 'InvalidSpec',
    });
  });
});
