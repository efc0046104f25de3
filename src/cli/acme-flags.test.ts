import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { acmeSettingsOf } from './acme-flags.js';

const directory = 'https://acme.example.com/directory';

describe('acmeSettingsOf', () => {
  it('is off without a directory, and refuses the other ACME flags alone', () => {
    expect(acmeSettingsOf({})).toBeUndefined();
    expect(() => acmeSettingsOf({ 'acme-email': 'a@example.com' })).toThrow(
      '--acme-email needs --acme-directory-url',
    );
    expect(() => acmeSettingsOf({ 'acme-domains': 'example.com' })).toThrow('--acme-domains needs');
  });

  it('needs a contact address and an http(s) directory', () => {
    expect(() => acmeSettingsOf({ 'acme-directory-url': directory })).toThrow(
      /--acme-email: an ACME account needs/,
    );
    expect(() => acmeSettingsOf({ 'acme-directory-url': 'ftp://x', 'acme-email': 'a@example.com' })).toThrow(
      /--acme-directory-url: 'ftp:\/\/x' is not an http\(s\) URL/,
    );
  });

  it('reads the challenges in order, the domains (lowercased, a leading *. dropped) and the retry delay', () => {
    const settings = acmeSettingsOf({
      'acme-directory-url': directory,
      'acme-email': 'a@example.com',
      'acme-challenges': 'http-01, tls-alpn-01',
      'acme-domains': 'Example.COM,*.example.org',
      'acme-retry-min': '2.5',
    });
    expect(settings).toMatchObject({
      directoryUrl: directory,
      email: 'a@example.com',
      challenges: ['http-01', 'tls-alpn-01'],
      domains: ['example.com', 'example.org'],
      retryMinMs: 2_500,
    });
  });

  it('refuses unknown challenges, bad domains, a bad delay and a bundle without a certificate, naming the flag', () => {
    const base = { 'acme-directory-url': directory, 'acme-email': 'a@example.com' };
    expect(() => acmeSettingsOf({ ...base, 'acme-challenges': 'dns-01' })).toThrow(
      /--acme-challenges: 'dns-01'/,
    );
    expect(() => acmeSettingsOf({ ...base, 'acme-domains': 'exa mple.com' })).toThrow(
      /--acme-domains: 'exa mple.com'/,
    );
    expect(() => acmeSettingsOf({ ...base, 'acme-retry-min': '0' })).toThrow(/--acme-retry-min: '0'/);
    const empty = join(mkdtempSync(join(tmpdir(), 'edgeward-acme-flags-')), 'bundle.pem');
    writeFileSync(empty, 'not a certificate');
    expect(() => acmeSettingsOf({ ...base, 'acme-ca-bundle': empty })).toThrow(
      /--acme-ca-bundle: .* holds no PEM/,
    );
    expect(() => acmeSettingsOf({ ...base, 'acme-ca-bundle': `${empty}.missing` })).toThrow(
      /--acme-ca-bundle: cannot read/,
    );
  });
});
