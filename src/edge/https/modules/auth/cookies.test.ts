import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { clearCookie, readCookies, setCookie } from './cookies.js';
import { CookieSealer } from './sealed-cookie.js';

describe('auth cookies', () => {
  it('reads cookies from one or several headers; the first of a name wins', () => {
    const cookies = readCookies(['a=1; b=x=y', 'a=2;  c = 3 ; broken']);
    expect([...cookies]).toEqual([
      ['a', '1'],
      ['b', 'x=y'],
      ['c', '3'],
    ]);
    expect(readCookies(undefined).size).toBe(0);
  });

  it('writes HttpOnly, Secure, SameSite=Lax cookies', () => {
    expect(setCookie('p.session', 'v', { path: '/', maxAge: 12.7 })).toBe(
      'p.session=v; Path=/; Max-Age=12; HttpOnly; Secure; SameSite=Lax',
    );
    expect(clearCookie('p.session', '/x/')).toBe(
      'p.session=; Path=/x/; Max-Age=0; HttpOnly; Secure; SameSite=Lax',
    );
  });

  it('seals values that open only with the same key and context, and only in the expected shape', () => {
    const key = randomBytes(32);
    const schema = z.object({ sub: z.string() });
    const sealed = new CookieSealer(key).seal({ sub: 'alice' }, 'route a');
    expect(sealed).toMatch(/^[!#$%&'()*+\-./0-9:<=>?@A-Z[\]^_`a-z{|}~]+$/);
    expect(new CookieSealer(key).open(sealed, 'route a', schema)).toEqual({ sub: 'alice' });
    expect(new CookieSealer(key).open(sealed, 'route b', schema)).toBeUndefined();
    expect(new CookieSealer(randomBytes(32)).open(sealed, 'route a', schema)).toBeUndefined();
    expect(new CookieSealer(key).open(sealed, 'route a', z.object({ sub: z.number() }))).toBeUndefined();
    expect(new CookieSealer(key).open('garbage', 'route a', schema)).toBeUndefined();
  });
});
