import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Certificates made by the `openssl` command line, and openssl's own reading of them, so tests
 * compare the server's derived fields with an independent implementation.
 */

export type OpensslKeyType = 'rsa' | 'ec' | 'ed25519';

export interface OpensslKey {
  path: string;
  pem: string;
}

export interface OpensslCertificate {
  path: string;
  pem: string;
  key: OpensslKey;
}

export interface CertificateSpec {
  /** `-subj` form: `/C=US/O=Acme/CN=leaf.example.com`. */
  subject: string;
  key: OpensslKey;
  /** Lines of the v3 extension section, e.g. `basicConstraints = critical,CA:TRUE`. */
  extensions: string[];
  /** Signs the new certificate; self-signed when absent. */
  issuer?: OpensslCertificate;
  /** `-set_serial` value, e.g. `0x80aa...`; random when absent. */
  serial?: string;
  days?: number;
}

export function openssl(args: string[], input?: string): string {
  return execFileSync('openssl', args, { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'] });
}

/** A scratch directory of PEM files; `cleanup()` removes it. */
export class OpensslWorkspace {
  readonly dir = mkdtempSync(join(tmpdir(), 'edgeward-openssl-'));
  #counter = 0;

  file(name: string): string {
    return join(this.dir, `${++this.#counter}-${name}`);
  }

  key(type: OpensslKeyType): OpensslKey {
    const path = this.file(`${type}.key`);
    const algorithm: Record<OpensslKeyType, string[]> = {
      rsa: ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048'],
      ec: ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'],
      ed25519: ['-algorithm', 'ED25519'],
    };
    openssl(['genpkey', ...algorithm[type], '-out', path]);
    return { path, pem: readFileSync(path, 'utf8') };
  }

  certificate(spec: CertificateSpec): OpensslCertificate {
    const extfile = this.file('ext.cnf');
    writeFileSync(extfile, ['[ext]', ...spec.extensions, ''].join('\n'));
    const path = this.file('cert.pem');
    const days = String(spec.days ?? 30);
    const serial = spec.serial ? ['-set_serial', spec.serial] : [];
    const csr = this.file('req.csr');
    openssl(['req', '-new', '-key', spec.key.path, '-subj', spec.subject, '-out', csr]);
    const signer = spec.issuer
      ? ['-CA', spec.issuer.path, '-CAkey', spec.issuer.key.path]
      : ['-signkey', spec.key.path];
    openssl([
      'x509',
      '-req',
      '-in',
      csr,
      ...signer,
      ...serial,
      '-days',
      days,
      '-extfile',
      extfile,
      '-extensions',
      'ext',
      '-out',
      path,
    ]);
    return { path, pem: readFileSync(path, 'utf8'), key: spec.key };
  }

  /** A self-signed server certificate for `host` (EC key), trusted by pinning it as the CA. */
  selfSigned(host: string): { cert: string; key: string } {
    const key = this.key('ec');
    const cert = this.certificate({
      subject: `/CN=${host}`,
      key,
      extensions: ['basicConstraints = CA:FALSE', `subjectAltName = DNS:${host}`],
    });
    return { cert: cert.pem, key: key.pem };
  }

  /** A CA (EC key) and a server certificate for `host` it signed. */
  caAndLeaf(host: string, caName = `${host} test CA`): { ca: OpensslCertificate; leaf: OpensslCertificate } {
    const ca = this.certificate({
      subject: `/CN=${caName}`,
      key: this.key('ec'),
      extensions: ['basicConstraints = critical,CA:TRUE', 'keyUsage = critical,keyCertSign,cRLSign'],
    });
    const leaf = this.certificate({
      subject: `/CN=${host}`,
      key: this.key('ec'),
      issuer: ca,
      extensions: ['basicConstraints = critical,CA:FALSE', `subjectAltName = DNS:${host}`],
    });
    return { ca, leaf };
  }

  cleanup(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** What openssl itself says about a certificate. */
export interface OpensslView {
  /** RFC 2253 attributes of the subject / issuer, unescaped, in the order printed. */
  subject: Array<[string, string]>;
  issuer: Array<[string, string]>;
  /** `serial=` value, as printed (uppercase hex). */
  serial: string;
  notBefore: Date;
  notAfter: Date;
  /** Names printed under "X509v3 Key Usage", e.g. "Digital Signature". */
  keyUsage: string[];
  /** Names printed under "X509v3 Extended Key Usage", e.g. "TLS Web Server Authentication". */
  extendedKeyUsage: string[];
  /** `DNS:` entries of the subjectAltName. */
  sanDns: string[];
  /** `IP Address:` entries, as printed (IPv6 uncompressed, uppercase). */
  sanIps: string[];
  /** "Public Key Algorithm" line, e.g. rsaEncryption, id-ecPublicKey, ED25519. */
  publicKeyAlgorithm: string;
}

/** RFC 2253 `A=v,B=w` with `\,`-style escapes, split into attribute pairs. */
function parseRfc2253(dn: string): Array<[string, string]> {
  const parts: string[] = [];
  let current = '';
  for (let index = 0; index < dn.length; index++) {
    const char = dn[index];
    if (char === '\\') {
      current += char + (dn[index + 1] ?? '');
      index++;
    } else if (char === ',') {
      parts.push(current);
      current = '';
    } else current += char;
  }
  if (current !== '') parts.push(current);
  return parts.map((part) => {
    const eq = part.indexOf('=');
    const value = part.slice(eq + 1).replace(/\\(.)/g, '$1');
    return [part.slice(0, eq), value];
  });
}

/** The line after the heading `name` in `-text` output, split on ", "; [] when the heading is absent. */
function extensionLine(text: string, heading: string): string[] {
  const lines = text.split('\n');
  const at = lines.findIndex((line) => line.trim().startsWith(heading));
  if (at < 0) return [];
  return (lines[at + 1] ?? '').trim().split(', ');
}

export function opensslView(certificatePath: string): OpensslView {
  const fields = (flag: string) =>
    openssl(['x509', '-in', certificatePath, '-noout', flag, '-nameopt', 'RFC2253']).trim();
  const after = (line: string) => line.slice(line.indexOf('=') + 1);
  const dates = fields('-dates').split('\n');
  const text = openssl(['x509', '-in', certificatePath, '-noout', '-text']);
  const san = extensionLine(text, 'X509v3 Subject Alternative Name');
  const algorithm = /Public Key Algorithm: (\S+)/.exec(text)?.[1] ?? '';
  return {
    subject: parseRfc2253(after(fields('-subject'))),
    issuer: parseRfc2253(after(fields('-issuer'))),
    serial: after(fields('-serial')),
    notBefore: new Date(after(dates.find((line) => line.startsWith('notBefore=')) ?? '')),
    notAfter: new Date(after(dates.find((line) => line.startsWith('notAfter=')) ?? '')),
    keyUsage: extensionLine(text, 'X509v3 Key Usage'),
    extendedKeyUsage: extensionLine(text, 'X509v3 Extended Key Usage'),
    sanDns: san.filter((entry) => entry.startsWith('DNS:')).map((entry) => entry.slice(4)),
    sanIps: san.filter((entry) => entry.startsWith('IP Address:')).map((entry) => entry.slice(11)),
    publicKeyAlgorithm: algorithm,
  };
}

/** The value of one attribute of an openssl-printed name, '' when absent. */
export function attributeOf(name: Array<[string, string]>, key: string): string {
  return name.find(([attribute]) => attribute === key)?.[1] ?? '';
}

/** openssl's display names of KeyUsage bits, mapped to the names the API documents. */
export const OPENSSL_KEY_USAGE: Record<string, string> = {
  'Digital Signature': 'digital_signature',
  'Non Repudiation': 'content_commitment',
  'Key Encipherment': 'key_encipherment',
  'Data Encipherment': 'data_encipherment',
  'Key Agreement': 'key_agreement',
  'Certificate Sign': 'cert_sign',
  'CRL Sign': 'crl_sign',
  'Encipher Only': 'encipher_only',
  'Decipher Only': 'decipher_only',
};

/** openssl's display names of extended key usages; anything else it prints as a dotted OID. */
export const OPENSSL_EXTENDED_KEY_USAGE: Record<string, string> = {
  'TLS Web Server Authentication': 'server_auth',
  'TLS Web Client Authentication': 'client_auth',
  'Code Signing': 'code_signing',
  'E-mail Protection': 'email_protection',
  'Time Stamping': 'time_stamping',
  'OCSP Signing': 'ocsp_signing',
  'Any Extended Key Usage': 'any',
};

export function mapNames(printed: string[], table: Record<string, string>): string[] {
  return printed.map((name) => table[name] ?? (/^\d+(\.\d+)+$/.test(name) ? name : `unmapped:${name}`));
}

/** An IP address as 8 (IPv6) or 4 (IPv4) numbers, so printed and canonical forms compare. */
export function ipNumbers(ip: string): number[] {
  if (!ip.includes(':')) return ip.split('.').map(Number);
  const [head = '', tail = ''] = ip.includes('::') ? ip.split('::') : [ip, ''];
  const groups = (part: string) =>
    part === '' ? [] : part.split(':').map((group) => Number.parseInt(group, 16));
  const left = groups(head);
  const right = groups(tail);
  return [...left, ...Array(8 - left.length - right.length).fill(0), ...right];
}

/** openssl's `notBefore`/`notAfter` as the API writes timestamps. */
export function rfc3339Seconds(date: Date): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}
