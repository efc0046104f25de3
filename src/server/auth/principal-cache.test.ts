import { describe, expect, it } from 'vitest';
import type { Principal } from './principal.js';
import { affectsPrincipals, PrincipalCache } from './principal-cache.js';

const alice: Principal = { kind: 'user', id: 'usr_alice', isAdmin: true, apiKeyId: 'ak_1' };

describe('PrincipalCache', () => {
  it('answers a second lookup of a key without loading it again', async () => {
    const cache = new PrincipalCache();
    let loads = 0;
    const load = async () => {
      loads++;
      return alice;
    };
    expect(await cache.lookup('hash', load)).toEqual(alice);
    expect(await cache.lookup('hash', load)).toEqual(alice);
    expect(loads).toBe(1);
    cache.invalidate();
    await cache.lookup('hash', load);
    expect(loads).toBe(2);
  });

  it('does not keep an answer loaded across an invalidation: it may predate the revocation', async () => {
    const cache = new PrincipalCache();
    let release: (principal: Principal) => void = () => {};
    const slow = cache.lookup('hash', () => new Promise<Principal>((resolve) => (release = resolve)));
    cache.invalidate(); // the key is revoked while the lookup reads the old row
    release(alice);
    expect(await slow).toEqual(alice);
    expect(cache.size).toBe(0);
  });

  it('keeps nothing while disabled, and never a failed lookup', async () => {
    const cache = new PrincipalCache();
    await expect(
      cache.lookup('unknown', async () => {
        throw new Error('401');
      }),
    ).rejects.toThrow('401');
    expect(cache.size).toBe(0);
    await cache.lookup('hash', async () => alice);
    cache.setEnabled(false);
    expect(cache.size).toBe(0);
    await cache.lookup('hash', async () => alice);
    expect(cache.size).toBe(0);
    cache.setEnabled(true);
    await cache.lookup('hash', async () => alice);
    expect(cache.size).toBe(1);
  });

  it('is invalidated by what can revoke a key, not by other changes', () => {
    expect(affectsPrincipals({ resource: 'api_key', action: 'deleted' })).toBe(true);
    expect(affectsPrincipals({ resource: 'bot_user', action: 'updated' })).toBe(true);
    expect(affectsPrincipals({ resource: 'bot_user', action: 'deleted' })).toBe(true);
    expect(affectsPrincipals({ resource: 'api_key', action: 'updated' })).toBe(false);
    expect(affectsPrincipals({ resource: 'ip_policy', action: 'deleted' })).toBe(false);
  });
});
