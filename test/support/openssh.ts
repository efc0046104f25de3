import { execFileSync, spawnSync } from 'node:child_process';
import { createPublicKey, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sshpk from 'sshpk';

/**
 * OpenSSH's own tools as the judge of our certificates, plus a certificate reader and signature
 * check written here from PROTOCOL.certkeys, independent of the server's encoder.
 */

export interface KeyFiles {
  /** Private key path; the public key is `${path}.pub`. */
  path: string;
  /** The authorized_keys line ssh-keygen wrote (with its comment). */
  line: string;
  /** `SHA256:...` as `ssh-keygen -l` prints it. */
  fingerprint: string;
}

export class OpenSshWorkspace {
  readonly dir = mkdtempSync(join(tmpdir(), 'edgeward-openssh-'));
  #count = 0;

  /** A fresh file name in the workspace. */
  path(stem: string): string {
    return join(this.dir, `${stem}-${++this.#count}`);
  }

  /** A real key pair: `ssh-keygen -t <type> [-b bits] -N '' -f <path>`. */
  keygen(type: string, bits?: number): KeyFiles {
    const path = this.path(`key-${type}${bits ?? ''}`);
    execFileSync('ssh-keygen', [
      '-q',
      '-t',
      type,
      ...(bits ? ['-b', String(bits)] : []),
      '-N',
      '',
      '-C',
      `${type}@edgeward-test`,
      '-f',
      path,
    ]);
    const line = readFileSync(`${path}.pub`, 'utf8').trim();
    return { path, line, fingerprint: this.fingerprint(line) };
  }

  /** `ssh-keygen -l -f` of a public key line: `{ bits, fingerprint, type }` (type like `ED25519`). */
  describeKey(line: string): { bits: number; fingerprint: string; type: string } {
    const path = this.path('pub');
    writeFileSync(`${path}.pub`, `${line}\n`);
    const out = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${path}.pub`], {
      encoding: 'utf8',
    });
    const match = /^(\d+) (SHA256:\S+) .*\(([A-Z0-9-]+)\)\s*$/.exec(out.trim());
    if (!match) throw new Error(`unexpected ssh-keygen -l output: ${out}`);
    return { bits: Number(match[1]), fingerprint: match[2] as string, type: match[3] as string };
  }

  fingerprint(line: string): string {
    return this.describeKey(line).fingerprint;
  }

  /** Writes `<key path>-cert.pub` beside a private key, where ssh and ssh-keygen look for it. */
  installCertificate(key: KeyFiles, certificateLine: string): string {
    const path = `${key.path}-cert.pub`;
    writeFileSync(path, `${certificateLine}\n`);
    return path;
  }

  /**
   * `ssh-keygen -L -f` of a certificate line, parsed. OpenSSH verifies the CA signature while it
   * loads a certificate, so a bad signature makes this throw ("incorrect signature").
   */
  listCertificate(certificateLine: string): ListedCertificate {
    const path = `${this.path('cert')}-cert.pub`;
    writeFileSync(path, `${certificateLine}\n`);
    const result = spawnSync('ssh-keygen', ['-L', '-f', path], {
      encoding: 'utf8',
      // -L prints times in local time; in UTC they compare with the API's RFC 3339 values.
      env: { ...process.env, TZ: 'UTC' },
    });
    if (result.status !== 0) {
      throw new Error(`ssh-keygen -L failed (${result.status}): ${result.stderr.trim()}`);
    }
    return parseListing(result.stdout);
  }

  /**
   * Signs a message with the private key and its certificate (`-Y sign -f key-cert.pub` grafts the
   * certificate onto the private key), then verifies it with `-Y verify` against an allowed_signers
   * line `<principal> cert-authority <CA public key>`. That accepts only if the certificate parses
   * (so the CA's signature over it is valid), was signed by exactly that CA, is a user certificate
   * listing `principal` (or none), and is valid now. Returns ssh-keygen's exit status and output.
   */
  signAndVerifyWithCertificate(
    key: KeyFiles,
    certificateLine: string,
    caPublicKey: string,
    principal: string,
  ): { status: number | null; output: string } {
    const certPath = this.installCertificate(key, certificateLine);
    const message = this.path('message');
    writeFileSync(message, 'edgeward certificate check\n');
    execFileSync('ssh-keygen', ['-q', '-Y', 'sign', '-f', certPath, '-n', 'file', message], {
      stdio: 'pipe',
    });
    const allowed = this.path('allowed_signers');
    writeFileSync(allowed, `${principal} cert-authority ${caPublicKey}\n`);
    const result = spawnSync(
      'ssh-keygen',
      ['-Y', 'verify', '-f', allowed, '-I', principal, '-n', 'file', '-s', `${message}.sig`],
      { input: readFileSync(message), encoding: 'utf8' },
    );
    return { status: result.status, output: `${result.stdout}${result.stderr}` };
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export interface ListedCertificate {
  /** e.g. `ssh-ed25519-cert-v01@openssh.com user certificate`. */
  type: string;
  /** The certified key: `ED25519-CERT SHA256:...`. */
  publicKey: string;
  /** `{ type: 'RSA', fingerprint: 'SHA256:...', algorithm: 'rsa-sha2-512' }`. */
  signingCa: { type: string; fingerprint: string; algorithm: string };
  keyId: string;
  serial: string;
  validFrom: string;
  validTo: string;
  principals: string[];
  /** Each entry as printed after the name, e.g. `force-command` -> `/bin/true`, flags -> ``. */
  criticalOptions: Record<string, string>;
  extensions: Record<string, string>;
}

function parseListing(out: string): ListedCertificate {
  const fields: Record<string, string> = {};
  const lists: Record<string, string[]> = {};
  let current: string | undefined;
  for (const line of out.split('\n').slice(1)) {
    const top = /^ {8}([A-Za-z][A-Za-z ]*): ?(.*)$/.exec(line);
    if (top) {
      current = top[1] as string;
      fields[current] = (top[2] as string).trim();
      lists[current] = [];
      continue;
    }
    const item = /^ {16}(.*)$/.exec(line);
    if (item && current) lists[current]?.push(item[1] as string);
  }
  const ca = /^(\S+) (SHA256:\S+) \(using (\S+)\)$/.exec(fields['Signing CA'] ?? '');
  const valid = /^from (\S+) to (\S+)$/.exec(fields.Valid ?? '');
  if (!ca || !valid) throw new Error(`unexpected ssh-keygen -L output:\n${out}`);
  const options = (name: string) =>
    Object.fromEntries(
      (lists[name] ?? []).map((entry) => {
        const space = entry.indexOf(' ');
        return space < 0 ? [entry, ''] : [entry.slice(0, space), entry.slice(space + 1)];
      }),
    );
  return {
    type: fields.Type ?? '',
    publicKey: fields['Public key'] ?? '',
    signingCa: { type: ca[1] as string, fingerprint: ca[2] as string, algorithm: ca[3] as string },
    keyId: fields['Key ID'] ?? '',
    serial: fields.Serial ?? '',
    validFrom: `${valid[1]}Z`,
    validTo: `${valid[2]}Z`,
    principals: fields.Principals === '(none)' ? [] : (lists.Principals ?? []),
    criticalOptions: fields['Critical Options'] === '(none)' ? {} : options('Critical Options'),
    extensions: fields.Extensions === '(none)' ? {} : options('Extensions'),
  };
}

/** A reader of the SSH wire format, written here so the test does not trust the server's encoder. */
class Reader {
  offset = 0;
  constructor(readonly bytes: Buffer) {}
  string(): Buffer {
    const length = this.bytes.readUInt32BE(this.offset);
    const value = this.bytes.subarray(this.offset + 4, this.offset + 4 + length);
    if (value.length !== length) throw new Error('truncated SSH string');
    this.offset += 4 + length;
    return value;
  }
  text(): string {
    return this.string().toString('utf8');
  }
  uint32(): number {
    const value = this.bytes.readUInt32BE(this.offset);
    this.offset += 4;
    return value;
  }
  uint64(): bigint {
    const value = this.bytes.readBigUInt64BE(this.offset);
    this.offset += 8;
    return value;
  }
  done(): boolean {
    return this.offset === this.bytes.length;
  }
}

/** Public parts per key type, in certificate order (PROTOCOL.certkeys). */
const PUBLIC_PARTS: Record<string, number> = {
  'ssh-ed25519': 1,
  'ssh-rsa': 2,
  'ecdsa-sha2-nistp256': 2,
  'ecdsa-sha2-nistp384': 2,
  'ecdsa-sha2-nistp521': 2,
};

export interface DecodedCertificate {
  certType: string;
  nonce: Buffer;
  /** The subject's public key blob rebuilt from the certificate. */
  subjectBlob: Buffer;
  serial: bigint;
  type: number;
  keyId: string;
  principals: string[];
  validAfter: bigint;
  validBefore: bigint;
  /** Raw `string name, string data` pairs, in certificate order. */
  criticalOptions: [string, Buffer][];
  extensions: [string, Buffer][];
  reserved: Buffer;
  signatureKey: Buffer;
  signature: Buffer;
  /** Everything the signature covers: the blob up to the signature field. */
  signed: Buffer;
}

export function decodeCertificate(certificateLine: string): DecodedCertificate {
  const [name, base64] = certificateLine.trim().split(/\s+/);
  const blob = Buffer.from(base64 ?? '', 'base64');
  const r = new Reader(blob);
  const certType = r.text();
  if (certType !== name) throw new Error(`line says ${name}, blob says ${certType}`);
  const keyType = certType.replace('-cert-v01@openssh.com', '');
  const nonce = r.string();
  const parts = PUBLIC_PARTS[keyType];
  if (parts === undefined) throw new Error(`unexpected key type ${keyType}`);
  const partsStart = r.offset;
  for (let i = 0; i < parts; i++) r.string();
  const subjectBlob = Buffer.concat([wireString(Buffer.from(keyType)), blob.subarray(partsStart, r.offset)]);
  const serial = r.uint64();
  const type = r.uint32();
  const keyId = r.text();
  const principalsReader = new Reader(r.string());
  const principals: string[] = [];
  while (!principalsReader.done()) principals.push(principalsReader.text());
  const validAfter = r.uint64();
  const validBefore = r.uint64();
  const pairs = (bytes: Buffer) => {
    const reader = new Reader(bytes);
    const out: [string, Buffer][] = [];
    while (!reader.done()) out.push([reader.text(), reader.string()]);
    return out;
  };
  const criticalOptions = pairs(r.string());
  const extensions = pairs(r.string());
  const reserved = r.string();
  const signatureKey = r.string();
  const signed = blob.subarray(0, r.offset);
  const signature = r.string();
  if (!r.done()) throw new Error('trailing bytes after the signature');
  return {
    certType,
    nonce,
    subjectBlob,
    serial,
    type,
    keyId,
    principals,
    validAfter,
    validBefore,
    criticalOptions,
    extensions,
    reserved,
    signatureKey,
    signature,
    signed,
  };
}

function wireString(bytes: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

/** An mpint's magnitude left-padded to `width` bytes, for IEEE P1363 `r || s`. */
function fixed(mpint: Buffer, width: number): Buffer {
  const magnitude = mpint[0] === 0 ? mpint.subarray(1) : mpint;
  return Buffer.concat([Buffer.alloc(width - magnitude.length), magnitude]);
}

/**
 * Verifies the certificate's signature with node:crypto against a CA public key line (converted
 * to SPKI by sshpk, not by our code). Returns the signature algorithm when valid, else false.
 */
export function verifyCertificateSignature(certificateLine: string, caPublicKeyLine: string): string | false {
  const cert = decodeCertificate(certificateLine);
  const caKey = sshpk.parseKey(caPublicKeyLine, 'ssh');
  if (!cert.signatureKey.equals(caKey.toBuffer('rfc4253'))) return false;
  const publicKey = createPublicKey(caKey.toString('pkcs8'));
  const sig = new Reader(cert.signature);
  const algorithm = sig.text();
  const body = sig.string();
  let ok: boolean;
  if (algorithm === 'ssh-ed25519') {
    ok = verify(null, cert.signed, publicKey, body);
  } else if (algorithm === 'rsa-sha2-512') {
    ok = verify('sha512', cert.signed, publicKey, body);
  } else if (algorithm.startsWith('ecdsa-sha2-nistp')) {
    const bits = Number(algorithm.slice('ecdsa-sha2-nistp'.length));
    const hash = bits === 256 ? 'sha256' : bits === 384 ? 'sha384' : 'sha512';
    const width = Math.ceil(bits / 8);
    const rs = new Reader(body);
    const p1363 = Buffer.concat([fixed(rs.string(), width), fixed(rs.string(), width)]);
    ok = verify(hash, cert.signed, { key: publicKey, dsaEncoding: 'ieee-p1363' }, p1363);
  } else {
    return false;
  }
  return ok ? algorithm : false;
}

/** The certificate line with one byte of its signed part (inside the key id) flipped. */
export function tamperedCertificate(certificateLine: string): string {
  const [name, base64] = certificateLine.trim().split(/\s+/);
  const blob = Buffer.from(base64 ?? '', 'base64');
  const cert = decodeCertificate(certificateLine);
  const at = blob.indexOf(Buffer.from(cert.keyId));
  if (at < 0) throw new Error('key id not found in the certificate');
  blob[at] = (blob[at] as number) ^ 0x01;
  return `${name} ${blob.toString('base64')}`;
}
