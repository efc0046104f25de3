import { describe, expect, it } from 'vitest';
import { normalizeTarget } from './request-target.js';

const normalize = (target: string) => normalizeTarget(target, 'a.test:443');

describe('normalizeTarget', () => {
  it('merges repeated slashes, resolves dot segments and keeps a trailing slash', () => {
    expect(normalize('/')).toEqual({ path: '/', query: '' });
    expect(normalize('//admin/secret')).toEqual({ path: '/admin/secret', query: '' });
    expect(normalize('/a/./b/../c/')).toEqual({ path: '/a/c/', query: '' });
    expect(normalize('/../../etc')).toEqual({ path: '/etc', query: '' });
    expect(normalize('/api/')).toEqual({ path: '/api/', query: '' });
  });

  it('decodes escapes of unreserved characters only, and leaves the query as it came', () => {
    expect(normalize('/%61dmin/secret?x=%2F')).toEqual({ path: '/admin/secret', query: '?x=%2F' });
    expect(normalize('/a%20b')).toEqual({ path: '/a%20b', query: '' });
  });

  it('refuses escaped slashes and backslashes, path parameters and foreign absolute forms', () => {
    expect(normalize('/x/..;/admin')).toBeUndefined();
    expect(normalize('/;x/admin')).toBeUndefined();
    expect(normalize('/x/..%3b/admin')).toBeUndefined();
    expect(normalize('/x/%2e%2e%3B/admin')).toBeUndefined();
    expect(normalize('/x/..%2fadmin')).toBeUndefined();
    expect(normalize('/a%5Cb')).toBeUndefined();
    expect(normalize('/a\\b')).toBeUndefined();
    expect(normalize('https://evil.test/x')).toBeUndefined();
    expect(normalize('*')).toBeUndefined();
  });

  it('takes the absolute form for its own authority', () => {
    expect(normalize('https://a.test:443/x?y')).toEqual({ path: '/x', query: '?y' });
  });
});
