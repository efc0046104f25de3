import { type KeyObject, randomBytes, sign } from 'node:crypto';
import { sshBlobKeyType, sshPublicKeyBlob } from './ssh-keypair.js';
import { readSshString, sshMpint, sshString, sshUint32, sshUint64 } from './ssh-wire.js';

/**
 * OpenSSH certificates as PROTOCOL.certkeys defines them (the `*-cert-v01@openssh.com` formats):
 * the subject's public key, who and when it is valid for, and the CA's signature over all of it.
 */

export type SshCertificateType = 'user' | 'host';

/** The `type` field: SSH2_CERT_TYPE_USER and SSH2_CERT_TYPE_HOST. */
const CERT_TYPE_CODES: Record<SshCertificateType, number> = { user: 1, host: 2 };

/** The key types a certificate can certify, and what their certificate type is called. */
const CERTIFIABLE_KEY_TYPES = new Set([
  'ssh-ed25519',
  'ssh-rsa',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
]);

/** ECDSA signs with the hash that matches the curve size (RFC 5656 section 6.2.1). */
const ECDSA_HASHES: Record<string, string> = {
  'ecdsa-sha2-nistp256': 'sha256',
  'ecdsa-sha2-nistp384': 'sha384',
  'ecdsa-sha2-nistp521': 'sha512',
};

export interface SshCertificateRequest {
  type: SshCertificateType;
  /** The subject's public key blob (RFC 4253 encoding), as in its authorized_keys line. */
  subjectPublicKeyBlob: Buffer;
  /** Free-form identity logged by sshd when the certificate is used; we use the resource id. */
  keyId: string;
  /** Empty means valid for every user (user certificates) or host (host certificates). */
  principals: readonly string[];
  validAfter: Date;
  /** PROTOCOL.certkeys' `valid_before`: the first instant the certificate is no longer valid. */
  validBefore: Date;
  /** User certificates only; host certificates must leave them empty. */
  criticalOptions?: Readonly<Record<string, string>>;
  extensions?: Readonly<Record<string, string>>;
  /** Random 64-bit serial when omitted. */
  serial?: bigint;
  /** 32 random bytes when omitted. */
  nonce?: Buffer;
}

export interface SignedSshCertificate {
  /** The certificate blob; `line` is its authorized_keys form. */
  blob: Buffer;
  /** `ssh-ed25519-cert-v01@openssh.com AAAA...`, what goes in a `-cert.pub` file. */
  line: string;
  serial: bigint;
}

/** Seconds since the epoch as the uint64 of the certificate; earlier than 1970 cannot be written. */
function epochSeconds(date: Date, field: string): bigint {
  const millis = date.getTime();
  if (!Number.isFinite(millis) || millis < 0) throw new Error(`${field} must be a date on or after 1970`);
  return BigInt(Math.floor(millis / 1000));
}

/**
 * Critical options and extensions: `string name, string data` pairs sorted by name (OpenSSH rejects
 * other orders), where data is empty for a flag and otherwise the value as an SSH string.
 */
function encodeOptions(options: Readonly<Record<string, string>>): Buffer {
  const names = Object.keys(options).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  return Buffer.concat(
    names.map((name) => {
      const value = options[name] ?? '';
      return Buffer.concat([sshString(name), sshString(value === '' ? Buffer.alloc(0) : sshString(value))]);
    }),
  );
}

/**
 * The SSH signature blob (`string algorithm, string signature`) of `data` by `privateKey`. RSA
 * signs with rsa-sha2-512 (RFC 8332): ssh-rsa means SHA-1, which OpenSSH 8.8+ refuses for CAs.
 */
export function sshSignature(privateKey: KeyObject, data: Buffer): Buffer {
  const keyType = sshBlobKeyType(sshPublicKeyBlob(privateKey));
  if (keyType === 'ssh-ed25519') {
    return Buffer.concat([sshString('ssh-ed25519'), sshString(sign(null, data, privateKey))]);
  }
  if (keyType === 'ssh-rsa') {
    return Buffer.concat([sshString('rsa-sha2-512'), sshString(sign('sha512', data, privateKey))]);
  }
  const hash = ECDSA_HASHES[keyType];
  if (hash) {
    // IEEE P1363 gives r || s at fixed width, which is simpler to split than DER; SSH wants two mpints.
    const rs = sign(hash, data, { key: privateKey, dsaEncoding: 'ieee-p1363' });
    const half = rs.length / 2;
    const body = Buffer.concat([sshMpint(rs.subarray(0, half)), sshMpint(rs.subarray(half))]);
    return Buffer.concat([sshString(keyType), sshString(body)]);
  }
  throw new Error(`cannot sign with a ${keyType} key`);
}

/** Builds the certificate and signs it with the CA's private key. */
export function signSshCertificate(
  request: SshCertificateRequest,
  caPrivateKey: KeyObject,
): SignedSshCertificate {
  const subjectType = sshBlobKeyType(request.subjectPublicKeyBlob);
  if (!CERTIFIABLE_KEY_TYPES.has(subjectType)) throw new Error(`cannot certify a ${subjectType} key`);
  const criticalOptions = request.criticalOptions ?? {};
  const extensions = request.extensions ?? {};
  if (request.type === 'host' && Object.keys(criticalOptions).length + Object.keys(extensions).length > 0) {
    throw new Error('host certificates have no critical options or extensions');
  }
  const validAfter = epochSeconds(request.validAfter, 'valid_after');
  const validBefore = epochSeconds(request.validBefore, 'valid_before');
  if (validBefore <= validAfter) throw new Error('valid_before must be after valid_after');
  const nonce = request.nonce ?? randomBytes(32);
  const serial = request.serial ?? randomBytes(8).readBigUInt64BE();
  const certType = `${subjectType}-cert-v01@openssh.com`;
  // The subject's public parts are its blob minus the leading key type string.
  const subjectParts = request.subjectPublicKeyBlob.subarray(
    readSshString(request.subjectPublicKeyBlob, 0).next,
  );

  const signed = Buffer.concat([
    sshString(certType),
    sshString(nonce),
    subjectParts,
    sshUint64(serial),
    sshUint32(CERT_TYPE_CODES[request.type]),
    sshString(request.keyId),
    sshString(Buffer.concat(request.principals.map((principal) => sshString(principal)))),
    sshUint64(validAfter),
    sshUint64(validBefore),
    sshString(encodeOptions(criticalOptions)),
    sshString(encodeOptions(extensions)),
    sshString(''), // reserved
    sshString(sshPublicKeyBlob(caPrivateKey)),
  ]);
  const blob = Buffer.concat([signed, sshString(sshSignature(caPrivateKey, signed))]);
  return { blob, line: `${certType} ${blob.toString('base64')}`, serial };
}
