import { describe, expect, it } from 'vitest';
import type { SshUserCertificateSpec } from '../../crds/definitions/ssh-user-certificate.js';
import { criticalOptionsOf, userFieldsMismatch } from './sync.js';

const spec = (fields: Partial<SshUserCertificateSpec>) =>
  ({ publicKey: 'ssh-ed25519 AAAA', ...fields }) as SshUserCertificateSpec;
const defaults = { 'permit-pty': '', 'permit-user-rc': '' };

describe('SSHUserCertificate options and extensions', () => {
  it('maps critical options to their OpenSSH names', () => {
    expect(criticalOptionsOf(spec({}))).toEqual({});
    expect(
      criticalOptionsOf(
        spec({ criticalOptions: { forceCommand: '/bin/true', sourceAddress: '10.0.0.0/8' } }),
      ),
    ).toEqual({ 'force-command': '/bin/true', 'source-address': '10.0.0.0/8' });
  });

  it('compares absent extensions with the server default, and {} with none', () => {
    const remote = { id: 'sucrt_1', critical_options: {}, extensions: defaults };
    expect(userFieldsMismatch(spec({}), remote)).toBeUndefined();
    expect(userFieldsMismatch(spec({ extensions: {} }), remote)).toMatch(/spec.extensions differ/);
    expect(userFieldsMismatch(spec({ extensions: {} }), { ...remote, extensions: {} })).toBeUndefined();
    expect(userFieldsMismatch(spec({ extensions: { 'permit-pty': '' } }), remote)).toMatch(
      /spec.extensions differ from those of sucrt_1/,
    );
  });

  it('sees a changed or removed critical option', () => {
    const remote = {
      id: 'sucrt_1',
      critical_options: { 'force-command': '/bin/true' },
      extensions: defaults,
    };
    expect(
      userFieldsMismatch(spec({ criticalOptions: { forceCommand: '/bin/true' } }), remote),
    ).toBeUndefined();
    expect(userFieldsMismatch(spec({ criticalOptions: { forceCommand: '/bin/date' } }), remote)).toMatch(
      /spec.criticalOptions differ/,
    );
    expect(userFieldsMismatch(spec({}), remote)).toMatch(/spec.criticalOptions differ/);
  });
});
