import { describe, expect, it } from 'vitest';
import { checkMetadata, parseEdgeAddr, parseLabels } from './options.js';

describe('parseEdgeAddr', () => {
  it.each([
    ['edge.example.com:443', { host: 'edge.example.com', port: 443 }],
    ['127.0.0.1:4443', { host: '127.0.0.1', port: 4443 }],
    ['[::1]:4443', { host: '::1', port: 4443 }],
  ])('%s', (text, address) => {
    expect(parseEdgeAddr(text)).toEqual(address);
  });

  it.each(['edge.example.com', 'edge:0', 'edge:70000', '::1:443', ':443', 'edge:http'])(
    'refuses %j',
    (text) => {
      expect(() => parseEdgeAddr(text)).toThrow(`--edge-addr: '${text}' is not host:port`);
    },
  );
});

describe('parseLabels', () => {
  it('reads key=value pairs; a value may hold = and be empty', () => {
    expect(parseLabels(['app=web', 'expr=a=b', 'team/x=', 'k.y-z_1=v'])).toEqual({
      app: 'web',
      expr: 'a=b',
      'team/x': '',
      'k.y-z_1': 'v',
    });
  });

  it.each([
    [[], /at least one key=value label/],
    [['app'], /'app' is not key=value/],
    [['=web'], /'=web' is not key=value/],
    [['a b=c'], /is not key=value/],
    [['app=web', 'app=api'], /'app' is given twice/],
    [[`app=${'x'.repeat(256)}`], /longer than 255/],
  ])('refuses %j', (texts, message) => {
    expect(() => parseLabels(texts)).toThrow(message);
  });
});

it('checkMetadata allows 4096 characters, not more', () => {
  expect(checkMetadata('x'.repeat(4096))).toHaveLength(4096);
  expect(() => checkMetadata('x'.repeat(4097))).toThrow('--metadata: at most 4096 characters, not 4097');
});
