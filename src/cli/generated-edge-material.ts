import { generateKeyPairSync } from 'node:crypto';
import { selfSignedCertificate } from '../crypto/x509.js';
import type { GeneratedMaterial } from '../operator/generated-keys/ensure-keys.js';
import { UsageError } from './command.js';

/** As long as the certificate an edge generates for itself (`--tunnel-name`). */
const TUNNEL_CERTIFICATE_DAYS = 825;

/**
 * The tunnel certificate every edge pod serves (tls.crt, tls.key), self-signed for `names`:
 * made once for all pods, so agents trust one certificate whichever pod they reach.
 */
export function tunnelCertificateMaterial(secretName: string, names: string[]): GeneratedMaterial {
  if (names.length === 0) throw new UsageError('--tls-name: at least one with --tls-secret');
  const ips = names.filter((name) => /^[\d.]+$|:/.test(name));
  const dnsNames = names.filter((name) => !ips.includes(name));
  return {
    name: secretName,
    type: 'kubernetes.io/tls',
    keys: ['tls.crt', 'tls.key'],
    generate: async () => {
      const generated = await selfSignedCertificate({
        commonName: dnsNames[0] ?? ips[0] ?? 'edgeward-edge',
        validDays: TUNNEL_CERTIFICATE_DAYS,
        dnsNames,
        ips,
      });
      return { 'tls.crt': generated.certificatePem, 'tls.key': generated.privateKeyPem };
    },
  };
}

/** The SSH host key every edge pod presents (ECDSA P-256, SEC1 PEM as `--ssh-host-key` reads). */
export function sshHostKeyMaterial(secretName: string, key: string): GeneratedMaterial {
  return {
    name: secretName,
    type: 'Opaque',
    keys: [key],
    generate: async () => {
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      return { [key]: privateKey.export({ type: 'sec1', format: 'pem' }).toString() };
    },
  };
}
