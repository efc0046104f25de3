import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/support/eventually.js';
import { MountedSecret } from '../../test/support/mounted-secret.js';
import { OpensslWorkspace } from '../../test/support/openssl.js';
import { currentEdgeCa, readEdgeCa, watchEdgeCa } from './edge-ca.js';

describe('the edge CA file (--edge-ca)', () => {
  let ssl: OpensslWorkspace;
  let first: string;
  let second: string;
  beforeAll(() => {
    ssl = new OpensslWorkspace();
    first = ssl.caAndLeaf('edge.test', 'first CA').ca.pem;
    second = ssl.caAndLeaf('edge.test', 'second CA').ca.pem;
  });
  afterAll(() => ssl?.cleanup());

  it('is read at start only when it holds certificates that parse', () => {
    const secret = new MountedSecret({ 'ca.crt': first, 'empty.crt': 'no PEM here' });
    try {
      expect(readEdgeCa(secret.path('ca.crt'))).toBe(first);
      expect(() => readEdgeCa(secret.path('empty.crt'))).toThrow(/empty\.crt holds no PEM certificate$/);
      expect(() => readEdgeCa(secret.path('missing.crt'))).toThrow(/^cannot read .*missing\.crt \(ENOENT\)$/);
    } finally {
      secret.remove();
    }
  });

  it('follows a mounted Secret swapped by the kubelet; contents that are no CA are refused and the current one kept', async () => {
    const secret = new MountedSecret({ 'ca.crt': first });
    const changes: string[][] = [];
    const errors: Error[] = [];
    const ca = watchEdgeCa(secret.path('ca.crt'), first, {
      debounceMs: 50,
      pollMs: 0,
      onChange: (certificates) => changes.push(certificates.map((certificate) => certificate.subject)),
      onError: (error) => errors.push(error),
    });
    try {
      expect(currentEdgeCa(ca.current)).toBe(first);
      // Both CAs for a while (a rotation's overlap), then the second alone.
      secret.update({ 'ca.crt': first + second });
      await waitFor(() => changes.length === 1, { what: 'the first swap', timeoutMs: 5000 });
      expect(changes[0]).toEqual(['CN=first CA', 'CN=second CA']);
      expect(ca.current()).toBe(first + second);
      secret.update({ 'ca.crt': second });
      await waitFor(() => changes.length === 2, { what: 'the second swap', timeoutMs: 5000 });
      expect(ca.current()).toBe(second);

      const broken = second.replace(/\n[A-Za-z0-9+/]{8}/, '\n!!!!!!!!');
      secret.update({ 'ca.crt': broken });
      await waitFor(() => errors.length === 1, { what: 'the refusal', timeoutMs: 5000 });
      expect(String((errors[0]?.cause as Error | undefined)?.message)).toContain(
        'certificate 1 does not parse',
      );
      secret.update({ 'ca.crt': 'nothing here' });
      await waitFor(() => errors.length === 2, { what: 'the second refusal', timeoutMs: 5000 });
      expect(String((errors[1]?.cause as Error | undefined)?.message)).toContain('holds no PEM certificate');
      expect(ca.current()).toBe(second);
      expect(new X509Certificate(ca.current()).subject).toBe('CN=second CA');
    } finally {
      ca.close();
      secret.remove();
    }
  });
});
