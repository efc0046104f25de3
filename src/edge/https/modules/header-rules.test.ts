import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { requestHeadersModuleInput, responseHeadersModuleInput } from '../../../schemas/route-modules.js';
import { compileHeaderRules, PROTECTED_HEADERS } from './header-rules.js';

describe('compileHeaderRules', () => {
  it('removes, then adds, replacing existing values', () => {
    const rules = compileHeaderRules({
      add: { 'X-Served-By': 'edgeward', 'X-Both': 'added' },
      remove: ['server', 'x-both', 'x-missing'],
    });
    const out = rules.apply({
      server: 'upstream/1.0',
      'x-served-by': 'upstream',
      'x-both': 'original',
      'content-type': 'text/plain',
    });
    expect({ ...out }).toEqual({
      'content-type': 'text/plain',
      'x-served-by': 'edgeward',
      'x-both': 'added',
    });
    expect(rules.ignored).toEqual([]);
  });

  it('matches names case-insensitively, in the rules and in the headers', () => {
    const rules = compileHeaderRules({ add: { 'X-Frame-Options': 'DENY' }, remove: ['X-Powered-By'] });
    const out = rules.apply({
      'X-POWERED-BY': 'php',
      'x-powered-by': 'php',
      'X-Frame-Options': 'SAMEORIGIN',
      'x-frame-options': 'ALLOW-FROM x',
      Accept: 'text/html',
    });
    // Untouched headers keep their spelling; added ones are lower case, one entry.
    expect({ ...out }).toEqual({ Accept: 'text/html', 'x-frame-options': 'DENY' });
  });

  it('replaces multi-valued headers with the single added value', () => {
    const rules = compileHeaderRules({ add: { 'Set-Cookie': 'session=; Max-Age=0' } });
    const out = rules.apply({ 'set-cookie': ['a=1', 'b=2'], vary: 'accept' });
    expect({ ...out }).toEqual({ 'set-cookie': 'session=; Max-Age=0', vary: 'accept' });
  });

  it('leaves other values as they are, arrays and undefined included, and does not mutate its input', () => {
    const rules = compileHeaderRules({ remove: ['x-a'] });
    const input = { 'x-a': '1', 'x-list': ['1', '2'], 'x-undefined': undefined };
    const out = rules.apply(input);
    expect({ ...out }).toEqual({ 'x-list': ['1', '2'], 'x-undefined': undefined });
    expect(input).toEqual({ 'x-a': '1', 'x-list': ['1', '2'], 'x-undefined': undefined });
    expect(out).not.toBe(input);
  });

  it('is a copy when there are no rules', () => {
    const rules = compileHeaderRules({});
    expect({ ...rules.apply({ a: '1' }) }).toEqual({ a: '1' });
  });

  it('ignores protected names in both lists, and says so', () => {
    const add: Record<string, string> = {};
    for (const name of PROTECTED_HEADERS) add[name.toUpperCase()] = 'x';
    const rules = compileHeaderRules({
      add: { ...add, 'x-ok': 'yes' },
      remove: ['Host', 'Content-Length', 'x-gone'],
    });
    const out = rules.apply({
      host: 'app.example.com',
      'content-length': '12',
      'transfer-encoding': 'chunked',
      connection: 'keep-alive',
      'x-gone': '1',
    });
    expect({ ...out }).toEqual({
      host: 'app.example.com',
      'content-length': '12',
      'transfer-encoding': 'chunked',
      connection: 'keep-alive',
      'x-ok': 'yes',
    });
    expect(rules.ignored).toContainEqual({ rule: 'remove', name: 'Host', reason: 'protected' });
    expect(rules.ignored).toContainEqual({ rule: 'remove', name: 'Content-Length', reason: 'protected' });
    expect(rules.ignored).toContainEqual({ rule: 'add', name: 'TRANSFER-ENCODING', reason: 'protected' });
    expect(rules.ignored).toHaveLength(PROTECTED_HEADERS.size + 2);
  });

  it('ignores added values node:http would refuse, which the schema lets through', () => {
    const config = responseHeadersModuleInput.parse({
      add: { 'x-check': '✓', 'x-bell': 'a\u0007b', 'x-latin1': 'café', 'x-tab': 'a\tb' },
    });
    const rules = compileHeaderRules(config);
    expect(rules.ignored).toEqual([
      { rule: 'add', name: 'x-check', reason: 'invalid_value' },
      { rule: 'add', name: 'x-bell', reason: 'invalid_value' },
    ]);
    expect({ ...rules.apply({}) }).toEqual({ 'x-latin1': 'café', 'x-tab': 'a\tb' });
  });

  it('treats a header named __proto__ as data', () => {
    const rules = compileHeaderRules({ add: JSON.parse('{"__proto__": "x"}') as Record<string, string> });
    const out = rules.apply(JSON.parse('{"__proto__": "y", "a": "1"}') as Record<string, string>);
    expect(Object.getPrototypeOf(out)).toBe(null);
    expect(Object.keys(out)).toEqual(['a', '__proto__']);
    expect(Object.getOwnPropertyDescriptor(out, '__proto__')?.value).toBe('x');
  });

  it('takes the parsed module config, and its output goes through node:http unchanged', async () => {
    const request = compileHeaderRules(
      requestHeadersModuleInput.parse({ add: { 'X-Edge': 'edgeward' }, remove: ['Cookie'] }),
    );
    const response = compileHeaderRules(
      responseHeadersModuleInput.parse({
        add: { 'Strict-Transport-Security': 'max-age=63072000' },
        remove: ['Server'],
      }),
    );
    const server = http.createServer((req, res) => {
      const headers = response.apply({ server: 'upstream', 'content-type': 'application/json' });
      res.writeHead(200, headers as http.OutgoingHttpHeaders);
      res.end(JSON.stringify(req.headers));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      const headers = request.apply({ host: `127.0.0.1:${port}`, cookie: 'a=1', 'x-edge': 'spoofed' });
      const res = await fetchJson(port, headers);
      expect(res.headers['strict-transport-security']).toBe('max-age=63072000');
      expect(res.headers.server).toBeUndefined();
      expect(res.body['x-edge']).toBe('edgeward');
      expect(res.body.cookie).toBeUndefined();
    } finally {
      server.close();
    }
  });
});

async function fetchJson(
  port: number,
  headers: http.OutgoingHttpHeaders,
): Promise<{ headers: http.IncomingHttpHeaders; body: Record<string, string> }> {
  const req = http.request({ host: '127.0.0.1', port, path: '/', headers });
  req.end();
  const [res] = (await once(req, 'response')) as [http.IncomingMessage];
  let text = '';
  for await (const chunk of res) text += String(chunk);
  return { headers: res.headers, body: JSON.parse(text) as Record<string, string> };
}
