import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { selfSignedCertificate } from '../crypto/x509.js';

export const TUNNEL_CERT_FILE = 'tunnel.crt';
export const TUNNEL_KEY_FILE = 'tunnel.key';

/**
 * The certificate agents verify when they dial the tunnel endpoint: the files given, or one this
 * edge generates once in its data directory (for `names`), which agents then trust with `--edge-ca`;
 * `files` are where it was read, for a watch that reloads it.
 */
export async function loadTunnelCertificate(options: {
  certFile?: string | undefined;
  keyFile?: string | undefined;
  dataDir: string;
  names: string[];
}): Promise<{ cert: string; key: string; files: [cert: string, key: string]; generatedAt?: string }> {
  if (options.certFile || options.keyFile) {
    if (!options.certFile || !options.keyFile) throw new Error('--tunnel-cert and --tunnel-key go together');
    return {
      cert: readFileSync(options.certFile, 'utf8'),
      key: readFileSync(options.keyFile, 'utf8'),
      files: [options.certFile, options.keyFile],
    };
  }
  const certPath = join(options.dataDir, TUNNEL_CERT_FILE);
  const keyPath = join(options.dataDir, TUNNEL_KEY_FILE);
  if (existsSync(certPath) && existsSync(keyPath)) {
    return {
      cert: readFileSync(certPath, 'utf8'),
      key: readFileSync(keyPath, 'utf8'),
      files: [certPath, keyPath],
    };
  }
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const ips = options.names.filter((name) => /^[\d.]+$|:/.test(name));
  const dnsNames = options.names.filter((name) => !ips.includes(name));
  const generated = await selfSignedCertificate({
    commonName: dnsNames[0] ?? ips[0] ?? 'edgeward-edge',
    validDays: 825,
    dnsNames,
    ips,
  });
  writeFileSync(keyPath, generated.privateKeyPem, { mode: 0o600 });
  writeFileSync(certPath, generated.certificatePem, { mode: 0o644 });
  return {
    cert: generated.certificatePem,
    key: generated.privateKeyPem,
    files: [certPath, keyPath],
    generatedAt: certPath,
  };
}
