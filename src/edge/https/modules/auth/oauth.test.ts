import type { CustomFetch } from 'openid-client';
import { describe, expect, it } from 'vitest';
import { withoutIdToken } from './oauth.js';

const TOKEN_URL = 'https://idp.example/token';

function answering(body: unknown, status = 200): CustomFetch {
  return async () =>
    new Response(JSON.stringify(body), {
      status,
      headers: { 'content-type': 'application/json', 'content-length': '999' },
    });
}

const call = (fetchImpl: CustomFetch, url: string) =>
  fetchImpl(url, { body: undefined, headers: {}, method: 'POST', redirect: 'manual' });

describe('OAuth token responses', () => {
  it('lose an ID token, which OAuth routes never read', async () => {
    const tokens = { access_token: 'a', token_type: 'bearer', id_token: 'x.y.z' };
    const response = await call(withoutIdToken(answering(tokens), TOKEN_URL), TOKEN_URL);
    expect(await response.json()).toEqual({ access_token: 'a', token_type: 'bearer' });
    expect(response.headers.get('content-length')).toBeNull();
    expect(response.headers.get('content-type')).toBe('application/json');
  });

  it('pass unchanged from other URLs and when they are errors', async () => {
    const tokens = { id_token: 'x.y.z' };
    const other = await call(withoutIdToken(answering(tokens), TOKEN_URL), 'https://idp.example/me');
    expect(await other.json()).toEqual(tokens);
    const failed = await call(
      withoutIdToken(answering({ error: 'invalid_grant' }, 400), TOKEN_URL),
      TOKEN_URL,
    );
    expect(failed.status).toBe(400);
    expect(await failed.json()).toEqual({ error: 'invalid_grant' });
  });
});
