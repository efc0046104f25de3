/**
 * X.509 for the control plane: parsing uploaded certificates and keys, deriving the fields the API
 * shows, and generating self-signed certificates. This is the ONE module that imports
 * `@peculiar/x509` (which needs `reflect-metadata` loaded before it); everything else uses these
 * helpers. Names and extensions are read with @peculiar/x509; signatures, issuance and key matching
 * are checked by OpenSSL through Node's `crypto.X509Certificate`, so two parsers agree on every
 * certificate that is accepted.
 */
import 'reflect-metadata';
import {
  createPrivateKey,
  type KeyObject,
  X509Certificate as NativeCertificate,
  randomBytes,
  webcrypto,
} from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { rfc3339 } from '../lib/rfc3339.js';
import { InvalidInputError } from './invalid-input.js';

// Explicit, so generation does not depend on which global `crypto` the runtime happens to expose.
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

/** One parsed certificate: @peculiar/x509 for names and extensions, OpenSSL (Node) for checks. */
export interface ParsedCertificate {
  cert: x509.X509Certificate;
  native: NativeCertificate;
}

/** One `-----BEGIN <label>----- ... -----END <label>-----` block of a PEM text. */
export interface PemBlock {
  label: string;
  /** The whole block, BEGIN and END lines included. */
  text: string;
  /** What is between the BEGIN and END lines. */
  body: string;
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END ([A-Z0-9 ]+)-----/g;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * Every PEM block of `text`, in order, skipping any text between blocks (RFC 7468 allows it);
 * a block whose END label differs from its BEGIN label is returned with label `''` (malformed).
 */
export function pemBlocks(text: string): PemBlock[] {
  return [...text.matchAll(PEM_BLOCK)].map((match) => ({
    label: match[1] === match[3] ? (match[1] ?? '') : '',
    text: match[0],
    body: match[2] ?? '',
  }));
}

function isPrivateKeyLabel(label: string): boolean {
  return label.endsWith('PRIVATE KEY');
}

/** The DER of a block body that is plain base64 (no RFC 1421 headers), else undefined. */
function blockDer(block: PemBlock): Buffer | undefined {
  const compact = block.body.replace(/\s+/g, '');
  if (!BASE64.test(compact) || compact.length % 4 !== 0) return undefined;
  return Buffer.from(compact, 'base64');
}

function parseDer(der: Buffer): ParsedCertificate | undefined {
  try {
    const native = new NativeCertificate(der);
    const cert = new x509.X509Certificate(new Uint8Array(der));
    return { cert, native };
  } catch {
    return undefined;
  }
}

/**
 * The certificates of a PEM text, in the order given. A 400 naming `field` when there is none, a
 * block is not a certificate, a `-----BEGIN` line has no matching END line, or the text mentions
 * `PRIVATE KEY` anywhere, inside a block or not (refused outright: a key pasted into a certificate
 * field, even without its END line, must never be kept). Callers store `normalizedPem(chain)`,
 * never the text as given, so nothing between or around the blocks is stored or shown.
 */
export function parsePemChain(pem: string, field: string): ParsedCertificate[] {
  if (pem.includes('PRIVATE KEY')) {
    throw new InvalidInputError(
      `${field}: contains a private key; give only certificates here (nothing was stored)`,
    );
  }
  const blocks = pemBlocks(pem);
  if ((pem.match(/-----BEGIN/g) ?? []).length !== blocks.length) {
    throw new InvalidInputError(`${field}: has a -----BEGIN line without a matching -----END line`);
  }
  if (blocks.length === 0) throw new InvalidInputError(`${field}: is not a PEM-encoded X.509 certificate`);
  return blocks.map((block, index) => {
    const where = blocks.length > 1 ? ` (block ${index + 1} of ${blocks.length})` : '';
    if (block.label !== 'CERTIFICATE') {
      const found = block.label === '' ? 'a malformed PEM block' : `a '${block.label}' block`;
      throw new InvalidInputError(`${field}: is not a PEM-encoded X.509 certificate${where}; found ${found}`);
    }
    const der = blockDer(block);
    const parsed = der && parseDer(der);
    if (!parsed) throw new InvalidInputError(`${field}: is not a PEM-encoded X.509 certificate${where}`);
    return parsed;
  });
}

/**
 * The certificates re-encoded from their DER, in order: one `CERTIFICATE` block each (base64 in
 * lines of 64), each ending in a newline. This, not the uploaded text, is what is stored and shown.
 */
export function normalizedPem(chain: ParsedCertificate[]): string {
  return chain.map((certificate) => `${certificate.cert.toString('pem')}\n`).join('');
}

/** Exactly one certificate whose basicConstraints say it is a CA, else a 400 naming `field`. */
export function parseCaCertificate(pem: string, field: string): ParsedCertificate {
  const chain = parsePemChain(pem, field);
  const [only] = chain;
  if (!only || chain.length !== 1) {
    throw new InvalidInputError(
      `${field}: contains ${chain.length} certificates; upload one CA certificate per certificate authority`,
    );
  }
  if (!only.cert.getExtension(x509.BasicConstraintsExtension)?.ca) {
    throw new InvalidInputError(`${field}: is not a CA certificate (basicConstraints CA is not true)`);
  }
  return only;
}

/**
 * Each certificate must be issued by the one after it: issuer name equal to the next subject name
 * (OpenSSL's issuer check, which also compares key identifiers) and a signature that verifies
 * with the next certificate's key.
 */
export function checkChainOrder(chain: ParsedCertificate[], field: string): void {
  for (let index = 0; index + 1 < chain.length; index++) {
    const child = chain[index] as ParsedCertificate;
    const issuer = chain[index + 1] as ParsedCertificate;
    let issued = false;
    try {
      issued = child.native.checkIssued(issuer.native) && child.native.verify(issuer.native.publicKey);
    } catch {
      issued = false;
    }
    if (!issued) {
      throw new InvalidInputError(
        `${field}: certificate ${index + 2} is not the issuer of certificate ${index + 1}; give the chain leaf first`,
      );
    }
  }
}

export type PrivateKeyType = 'rsa' | 'ecdsa' | 'ed25519';

/**
 * The one unencrypted private key of a PEM text (PKCS#8, PKCS#1 or SEC 1; an `EC PARAMETERS`
 * block beside it, as `openssl ecparam -genkey` writes, is ignored). A 400 naming `field`
 * otherwise. Messages never quote the input.
 */
export function parsePrivateKey(pem: string, field: string): KeyObject {
  const blocks = pemBlocks(pem);
  const keys = blocks.filter((block) => isPrivateKeyLabel(block.label));
  const encrypted = (block: PemBlock) =>
    block.label === 'ENCRYPTED PRIVATE KEY' || /Proc-Type:\s*4,ENCRYPTED/.test(block.body);
  if (keys.some(encrypted))
    throw new InvalidInputError(`${field}: is encrypted; upload the key without a passphrase`);
  const other = blocks.find((block) => !isPrivateKeyLabel(block.label) && block.label !== 'EC PARAMETERS');
  if (other) {
    const found = other.label === '' ? 'a malformed PEM block' : `a '${other.label}' block`;
    throw new InvalidInputError(`${field}: must hold only the private key; found ${found}`);
  }
  const [key] = keys;
  if (!key) throw new InvalidInputError(`${field}: is not a PEM-encoded private key`);
  if (keys.length > 1) {
    throw new InvalidInputError(
      `${field}: contains ${keys.length} private keys; give only the key of the leaf certificate`,
    );
  }
  try {
    return createPrivateKey({ key: key.text, format: 'pem' });
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ERR_MISSING_PASSPHRASE') {
      throw new InvalidInputError(`${field}: is encrypted; upload the key without a passphrase`);
    }
    throw new InvalidInputError(`${field}: is not a PEM-encoded private key`);
  }
}

/** `rsa` (including RSA-PSS), `ecdsa` or `ed25519`; any other key type is a 400 naming `field`. */
export function privateKeyType(key: KeyObject, field: string): PrivateKeyType {
  switch (key.asymmetricKeyType) {
    case 'rsa':
    case 'rsa-pss':
      return 'rsa';
    case 'ec':
      return 'ecdsa';
    case 'ed25519':
      return 'ed25519';
    default:
      throw new InvalidInputError(
        `${field}: has key type '${key.asymmetricKeyType ?? 'unknown'}'; use an RSA, ECDSA or Ed25519 key`,
      );
  }
}

/** Whether `key` is the private half of the certificate's public key (OpenSSL's own check). */
export function privateKeyMatches(certificate: ParsedCertificate, key: KeyObject): boolean {
  try {
    return certificate.native.checkPrivateKey(key);
  } catch {
    return false;
  }
}

// ---- Derived fields -------------------------------------------------------------------------

/**
 * KeyUsage bits in bit order (RFC 5280 §4.2.1.3), named in snake_case after the RFC's names;
 * bit 1 (nonRepudiation) has the X.509 (2008) name `content_commitment`.
 */
export const KEY_USAGE_NAMES: ReadonlyArray<readonly [x509.KeyUsageFlags, string]> = [
  [x509.KeyUsageFlags.digitalSignature, 'digital_signature'],
  [x509.KeyUsageFlags.nonRepudiation, 'content_commitment'],
  [x509.KeyUsageFlags.keyEncipherment, 'key_encipherment'],
  [x509.KeyUsageFlags.dataEncipherment, 'data_encipherment'],
  [x509.KeyUsageFlags.keyAgreement, 'key_agreement'],
  [x509.KeyUsageFlags.keyCertSign, 'cert_sign'],
  [x509.KeyUsageFlags.cRLSign, 'crl_sign'],
  [x509.KeyUsageFlags.encipherOnly, 'encipher_only'],
  [x509.KeyUsageFlags.decipherOnly, 'decipher_only'],
];

/** Names of well-known ExtendedKeyUsage purposes; any other purpose is shown as its dotted OID. */
export const EXTENDED_KEY_USAGE_NAMES: Readonly<Record<string, string>> = {
  '2.5.29.37.0': 'any',
  '1.3.6.1.5.5.7.3.1': 'server_auth',
  '1.3.6.1.5.5.7.3.2': 'client_auth',
  '1.3.6.1.5.5.7.3.3': 'code_signing',
  '1.3.6.1.5.5.7.3.4': 'email_protection',
  '1.3.6.1.5.5.7.3.5': 'ipsec_end_system',
  '1.3.6.1.5.5.7.3.6': 'ipsec_tunnel',
  '1.3.6.1.5.5.7.3.7': 'ipsec_user',
  '1.3.6.1.5.5.7.3.8': 'time_stamping',
  '1.3.6.1.5.5.7.3.9': 'ocsp_signing',
};

export function keyUsageNames(certificate: ParsedCertificate): string[] {
  const usages = certificate.cert.getExtension(x509.KeyUsagesExtension)?.usages ?? 0;
  return KEY_USAGE_NAMES.filter(([flag]) => (usages & flag) !== 0).map(([, name]) => name);
}

/** In the order the certificate lists them. */
export function extendedKeyUsageNames(certificate: ParsedCertificate): string[] {
  const usages = certificate.cert.getExtension(x509.ExtendedKeyUsageExtension)?.usages ?? [];
  // Array.from: the library's list is an Array subclass, and `map` would keep that class.
  return Array.from(usages, (oid) => EXTENDED_KEY_USAGE_NAMES[String(oid)] ?? String(oid));
}

/** Subject attribute OIDs (RFC 4519) of the fields the API shows. */
const ATTRIBUTE = {
  commonName: '2.5.4.3',
  country: '2.5.4.6',
  locality: '2.5.4.7',
  province: '2.5.4.8',
  organization: '2.5.4.10',
  organizationalUnit: '2.5.4.11',
} as const;

/**
 * A name's common name, '' when absent. With several CNs the last (most specific, in DER order)
 * wins, as most TLS stacks do.
 */
export function commonName(name: x509.Name): string {
  return name.getField(ATTRIBUTE.commonName).at(-1) ?? '';
}

/** Every value of one attribute, in DER order, joined by ", "; '' when absent. */
function attribute(name: x509.Name, oid: string): string {
  return name.getField(oid).join(', ');
}

/** `subjectAltName` DNS names and IP addresses in certificate order; IPs in canonical text form. */
export function subjectAlternativeNames(certificate: ParsedCertificate): {
  dns_names: string[];
  ips: string[];
} {
  const names = Array.from(
    certificate.cert.getExtension(x509.SubjectAlternativeNameExtension)?.names.items ?? [],
  );
  return {
    dns_names: names.filter((name) => name.type === 'dns').map((name) => name.value),
    ips: names.filter((name) => name.type === 'ip').map((name) => canonicalIp(name.value)),
  };
}

/** IPv4 dotted quad; IPv6 in RFC 5952 form (lowercase, longest zero run compressed). */
export function canonicalIp(ip: string): string {
  if (!ip.includes(':')) return ip;
  try {
    return new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  } catch {
    return ip;
  }
}

/**
 * The serial number as lowercase hex without colons: the bytes of the DER INTEGER with its
 * sign-padding zero byte removed (what `openssl x509 -serial` prints, in lowercase).
 */
export function serialNumberHex(certificate: ParsedCertificate): string {
  return certificate.cert.serialNumber.toLowerCase();
}

/** The fields shown for an uploaded certificate authority. */
export interface CertificateAuthorityFields {
  subject_common_name: string;
  not_before: string;
  not_after: string;
  key_usages: string[];
  extended_key_usages: string[];
}

export function certificateAuthorityFields(certificate: ParsedCertificate): CertificateAuthorityFields {
  return {
    subject_common_name: commonName(certificate.cert.subjectName),
    not_before: rfc3339(certificate.cert.notBefore),
    not_after: rfc3339(certificate.cert.notAfter),
    key_usages: keyUsageNames(certificate),
    extended_key_usages: extendedKeyUsageNames(certificate),
  };
}

/** The fields shown for a TLS certificate, all from its leaf. */
export interface LeafCertificateFields {
  subject_common_name: string;
  subject_alternative_names: { dns_names: string[]; ips: string[] };
  issued_at: string | null;
  not_before: string;
  not_after: string;
  key_usages: string[];
  extended_key_usages: string[];
  private_key_type: PrivateKeyType;
  issuer_common_name: string;
  serial_number: string;
  subject_organization: string;
  subject_organizational_unit: string;
  subject_locality: string;
  subject_province: string;
  subject_country: string;
}

export function leafCertificateFields(
  leaf: ParsedCertificate,
  keyType: PrivateKeyType,
  issuedAt: string | null,
): LeafCertificateFields {
  const subject = leaf.cert.subjectName;
  return {
    subject_common_name: commonName(subject),
    subject_alternative_names: subjectAlternativeNames(leaf),
    issued_at: issuedAt,
    not_before: rfc3339(leaf.cert.notBefore),
    not_after: rfc3339(leaf.cert.notAfter),
    key_usages: keyUsageNames(leaf),
    extended_key_usages: extendedKeyUsageNames(leaf),
    private_key_type: keyType,
    issuer_common_name: commonName(leaf.cert.issuerName),
    serial_number: serialNumberHex(leaf),
    subject_organization: attribute(subject, ATTRIBUTE.organization),
    subject_organizational_unit: attribute(subject, ATTRIBUTE.organizationalUnit),
    subject_locality: attribute(subject, ATTRIBUTE.locality),
    subject_province: attribute(subject, ATTRIBUTE.province),
    subject_country: attribute(subject, ATTRIBUTE.country),
  };
}

// ---- Generation ---------------------------------------------------------------------------------

export interface SelfSignedOptions {
  commonName: string;
  /** Days from `notBefore` to `notAfter`. */
  validDays: number;
  /** Default: now, to the second. */
  notBefore?: Date;
  /** Default `ecdsa` (P-256); `rsa` is RSA-2048. Both sign with SHA-256. */
  keyType?: 'rsa' | 'ecdsa';
  /** subjectAltName entries; the extension is left out when both are empty. */
  dnsNames?: string[];
  ips?: string[];
}

export interface GeneratedCertificate {
  certificatePem: string;
  /** PKCS#8 PEM (`BEGIN PRIVATE KEY`), unencrypted: seal it before storing. */
  privateKeyPem: string;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * A fresh key pair and a self-signed end-entity certificate for it (basicConstraints CA:false,
 * digitalSignature (+ keyEncipherment for RSA), EKU serverAuth and clientAuth).
 */
export async function selfSignedCertificate(options: SelfSignedOptions): Promise<GeneratedCertificate> {
  if (!(options.validDays > 0)) {
    throw new Error(`selfSignedCertificate: validDays must be positive, got ${options.validDays}`);
  }
  const keyType = options.keyType ?? 'ecdsa';
  const algorithm =
    keyType === 'rsa'
      ? {
          name: 'RSASSA-PKCS1-v1_5',
          hash: 'SHA-256',
          modulusLength: 2048,
          publicExponent: new Uint8Array([1, 0, 1]),
        }
      : { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;
  const notBefore = new Date(Math.floor((options.notBefore ?? new Date()).getTime() / 1000) * 1000);
  const notAfter = new Date(notBefore.getTime() + options.validDays * DAY_MS);
  const usages =
    keyType === 'rsa'
      ? x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment
      : x509.KeyUsageFlags.digitalSignature;
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(usages, true),
    new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
  ];
  const altNames = [
    ...(options.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(options.ips ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  if (altNames.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(altNames));
  // A positive 127-bit serial: random (RFC 5280 asks for unpredictability), high bit clear.
  const serial = randomBytes(16);
  serial[0] = (serial[0] ?? 0) & 0x7f;
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial.toString('hex'),
    name: [{ CN: [options.commonName] }],
    notBefore,
    notAfter,
    keys,
    signingAlgorithm: algorithm,
    extensions,
  });
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
  return {
    certificatePem: `${certificate.toString('pem')}\n`,
    privateKeyPem: `${x509.PemConverter.encode(pkcs8, 'PRIVATE KEY')}\n`,
  };
}

export interface IssueOptions {
  commonName: string;
  /** Subject O= values: Kubernetes reads them as the groups of a client certificate. */
  organizations?: string[];
  validDays: number;
  /** A CA certificate (keyCertSign, CA:true); otherwise an end-entity certificate. */
  isCa?: boolean;
  /** Extended key usages of an end-entity certificate. */
  usages?: Array<'server' | 'client'>;
  dnsNames?: string[];
  ips?: string[];
  /** The issuing CA (from an earlier `issueCertificate({isCa: true})`); self-signed when absent. */
  issuer?: GeneratedCertificate;
}

const ECDSA_P256 = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

/**
 * An ECDSA P-256 key and a certificate for it, self-signed or issued by a CA made here: the small
 * PKI of a local test control plane (CA, serving certificate, client certificates).
 */
export async function issueCertificate(options: IssueOptions): Promise<GeneratedCertificate> {
  const keys = (await webcrypto.subtle.generateKey(ECDSA_P256, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;
  const notBefore = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000);
  const notAfter = new Date(notBefore.getTime() + options.validDays * DAY_MS);
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(options.isCa === true, undefined, true),
    new x509.KeyUsagesExtension(
      options.isCa
        ? x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature
        : x509.KeyUsageFlags.digitalSignature,
      true,
    ),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
  ];
  if (!options.isCa) {
    const usages = (options.usages ?? ['server']).map((usage) =>
      usage === 'server' ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth,
    );
    extensions.push(new x509.ExtendedKeyUsageExtension(usages));
  }
  const altNames = [
    ...(options.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(options.ips ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  if (altNames.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(altNames));
  const serial = randomBytes(16);
  serial[0] = (serial[0] ?? 0) & 0x7f;
  const name = [{ CN: [options.commonName] }, ...(options.organizations ?? []).map((o) => ({ O: [o] }))];
  let certificate: x509.X509Certificate;
  if (options.issuer) {
    const issuerCertificate = new x509.X509Certificate(options.issuer.certificatePem);
    const issuerKey = await webcrypto.subtle.importKey(
      'pkcs8',
      x509.PemConverter.decodeFirst(options.issuer.privateKeyPem),
      ECDSA_P256,
      false,
      ['sign'],
    );
    extensions.push(await x509.AuthorityKeyIdentifierExtension.create(issuerCertificate));
    certificate = await x509.X509CertificateGenerator.create({
      serialNumber: serial.toString('hex'),
      subject: name,
      issuer: issuerCertificate.subject,
      notBefore,
      notAfter,
      publicKey: keys.publicKey,
      signingKey: issuerKey,
      signingAlgorithm: ECDSA_P256,
      extensions,
    });
  } else {
    certificate = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: serial.toString('hex'),
      name,
      notBefore,
      notAfter,
      keys,
      signingAlgorithm: ECDSA_P256,
      extensions,
    });
  }
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
  return {
    certificatePem: `${certificate.toString('pem')}\n`,
    privateKeyPem: `${x509.PemConverter.encode(pkcs8, 'PRIVATE KEY')}\n`,
  };
}
