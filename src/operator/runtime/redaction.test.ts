import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';
import { redactText } from './redaction.js';

describe('redactText', () => {
  it('masks values of sensitive keys in any spelling, bearer tokens and PEM private keys', () => {
    const text = [
      'token=abc123',
      '"clientSecret": "s3cr3t"',
      "api_key: 'k-1'",
      'authtoken: 2abcDEF',
      'Authorization: Bearer eyJhbGciOi.x.y',
      '-----BEGIN PRIVATE KEY-----\nMIIEv\n-----END PRIVATE KEY-----',
    ].join('; ');
    const redacted = redactText(text);
    for (const secret of ['abc123', 's3cr3t', 'k-1', '2abcDEF', 'eyJhbGciOi', 'MIIEv']) {
      expect(redacted).not.toContain(secret);
    }
    expect(redacted).toContain('token=[REDACTED]');
  });

  it('leaves ordinary text alone, including words that contain a sensitive one', () => {
    const text = 'secretKeyRef default/tls not found; tokens left: 5; Secret "x" is foreign';
    expect(redactText(text)).toBe(text);
  });
});

describe('logger', () => {
  it('censors sensitive fields by name, nested too, and carries object fields', async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, callback) {
        lines.push(String(chunk));
        callback();
      },
    });
    const log = createLogger({ level: 'info', destination });
    log
      .child({ kind: 'TunnelCredential', namespace: 'ns', name: 'c' })
      .info(
        { token: 'tok_1', spec: { auth: { secretAccessKey: 'aws_2', clientSecret: 'cs_3' } }, apiKey: 'k_4' },
        'created',
      );
    const line = JSON.parse(lines[0] ?? '{}') as Record<string, unknown>;
    expect(line).toMatchObject({ kind: 'TunnelCredential', namespace: 'ns', name: 'c', msg: 'created' });
    expect(line.token).toBe('[REDACTED]');
    expect(line.apiKey).toBe('[REDACTED]');
    expect(JSON.stringify(line)).not.toMatch(/tok_1|aws_2|cs_3|k_4/);
  });
});
