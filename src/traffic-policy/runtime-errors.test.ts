import { describe, expect, it } from 'vitest';
import { compilePolicy } from './compile.js';
import { PolicyEvaluationError } from './errors.js';
import type { PolicyRequest } from './types.js';

const REQUEST: PolicyRequest = {
  method: 'GET',
  url: 'https://app.example.com/a',
  path: '/a',
  query: '',
  host: 'app.example.com',
  headers: {},
  clientIp: '192.0.2.1',
  clientPort: 40000,
};

function collecting() {
  const errors: PolicyEvaluationError[] = [];
  return { errors, onError: (error: PolicyEvaluationError) => errors.push(error) };
}

describe('expressions that fail at run time', () => {
  it('make the rule not match, report the error and let later rules run', () => {
    const { errors, onError } = collecting();
    const policy = compilePolicy(
      {
        inbound: [
          {
            name: 'needs-header',
            expressions: ["req.headers['x-token'][0] == 'secret'"],
            actions: [{ type: 'deny' }],
          },
          { name: 'divides', expressions: ['conn.client_port / 0 == 1'], actions: [{ type: 'deny' }] },
          { name: 'next', actions: [{ type: 'add-headers', config: { headers: { 'x-next': 'ran' } } }] },
        ],
      },
      { phase: 'http', onError },
    );
    expect(policy.inbound(REQUEST)).toEqual({ setHeaders: { 'x-next': 'ran' }, removeHeaders: [] });
    expect(errors).toHaveLength(2);
    expect(errors[0]).toBeInstanceOf(PolicyEvaluationError);
    expect(errors[0]?.path).toEqual(['inbound', 0, 'expressions', 0]);
    expect(errors[0]?.rule).toBe('needs-header');
    expect(errors[0]?.message).toMatch(
      /^inbound\[0\]\.expressions\[0\] \(rule 'needs-header'\): the expression failed, so the rule does not apply: No such key: x-token/,
    );
    expect(errors[0]?.cause).toBeInstanceOf(Error);
    expect(errors[1]?.path).toEqual(['inbound', 1, 'expressions', 0]);
    // With the header present, the first rule applies.
    expect(policy.inbound({ ...REQUEST, headers: { 'X-Token': 'secret' } }).respond?.status).toBe(403);
  });

  it('a dyn value that is not a bool is reported and does not match', () => {
    const { errors, onError } = collecting();
    const policy = compilePolicy(
      { inbound: [{ name: 'dyn', expressions: ['dyn(req.path)'], actions: [{ type: 'deny' }] }] },
      { phase: 'http', onError },
    );
    expect(policy.inbound(REQUEST).respond).toBeUndefined();
    expect(errors[0]?.message).toMatch(/the expression gave string, not a bool/);
  });

  it('works without an onError hook', () => {
    const policy = compilePolicy(
      { inbound: [{ name: 'r', expressions: ["req.headers['x'][0] == 'y'"], actions: [{ type: 'deny' }] }] },
      { phase: 'http' },
    );
    expect(policy.inbound(REQUEST)).toEqual({ setHeaders: {}, removeHeaders: [] });
  });

  it('on a connection, a failing rule does not refuse it', () => {
    const { errors, onError } = collecting();
    const policy = compilePolicy(
      { inbound: [{ name: 'r', expressions: ['conn.client_port / 0 > 1'], actions: [{ type: 'deny' }] }] },
      { phase: 'connection', onError },
    );
    expect(policy.connection({ clientIp: '192.0.2.1', clientPort: 1 })).toEqual({ allowed: true });
    expect(errors).toHaveLength(1);
  });

  it('a rewrite that gives no path is reported and not applied', () => {
    const { errors, onError } = collecting();
    const policy = compilePolicy(
      {
        inbound: [
          { name: 'bad-rewrite', actions: [{ type: 'url-rewrite', config: { from: '^/a$', to: 'a' } }] },
        ],
      },
      { phase: 'http', onError },
    );
    expect(policy.inbound(REQUEST).rewrittenPath).toBeUndefined();
    expect(errors[0]?.path).toEqual(['inbound', 0, 'actions', 0]);
    expect(errors[0]?.message).toMatch(/rewriting "\/a" gave "a", which is not a path/);
  });
});

describe('hooks that throw', () => {
  it('do not stop the evaluation', () => {
    const policy = compilePolicy(
      {
        inbound: [
          { name: 'fails', expressions: ["req.headers['x'][0] == 'y'"], actions: [{ type: 'deny' }] },
          {
            name: 'logs',
            actions: [{ type: 'log' }, { type: 'add-headers', config: { headers: { 'x-after': '1' } } }],
          },
        ],
      },
      {
        phase: 'http',
        onError: () => {
          throw new Error('broken error hook');
        },
        onLog: () => {
          throw new Error('broken log hook');
        },
      },
    );
    expect(policy.inbound(REQUEST)).toEqual({ setHeaders: { 'x-after': '1' }, removeHeaders: [] });
  });
});
