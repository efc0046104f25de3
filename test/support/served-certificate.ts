import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { promisify } from 'node:util';
import type { TestServer } from './server.js';

/**
 * What an edge serves for a name, read by `openssl s_client` (verified against a CA file when one
 * is given), and which uploaded TLS certificates the server holds for it: for tests that follow a
 * certificate from a Kubernetes Secret to the edge.
 */

const run = promisify(execFile);

/** A serial as lowercase hex without leading zeros, so openssl's, node's and the API's compare. */
export function normalSerial(serial: string): string {
  return serial
    .trim()
    .replace(/^serial=/, '')
    .replace(/:/g, '')
    .toLowerCase()
    .replace(/^0+(?=.)/, '');
}

/** The serial of the leaf of a PEM text (the first certificate). */
export const serialOf = (pem: string): string => normalSerial(new X509Certificate(pem).serialNumber);

/**
 * The serial of the certificate the edge's TLS listener on `port` presents for `host`; with
 * `caFile`, only when it verifies against that CA for that name (otherwise the command fails).
 */
export async function servedSerial(port: number, host: string, caFile?: string): Promise<string> {
  const verify = caFile ? `-verify_return_error -verify_hostname ${host} -CAfile ${caFile}` : '';
  const { stdout } = await run('sh', [
    '-c',
    `openssl s_client -connect 127.0.0.1:${port} -servername ${host} ${verify} </dev/null 2>/dev/null | openssl x509 -noout -serial`,
  ]);
  return normalSerial(stdout);
}

/** `servedSerial`, or undefined while the handshake fails or does not verify. */
export const servedSerialIfAny = (port: number, host: string, caFile?: string) =>
  servedSerial(port, host, caFile).catch(() => undefined);

export interface UploadedCertificate {
  id: string;
  serial_number: string;
  not_after: string;
  issued_at: string | null;
  subject_alternative_names: { dns_names: string[] };
}

/** The uploaded (not ACME-issued) TLS certificates of the server that name `host`, oldest first. */
export async function uploadedFor(t: TestServer, host: string): Promise<UploadedCertificate[]> {
  const listed = await t.api<{ tls_certificates: UploadedCertificate[] }>(
    'GET',
    '/tls_certificates?limit=100',
  );
  if (listed.status !== 200) throw new Error(`listing TLS certificates: ${listed.status} ${listed.text}`);
  return listed.body.tls_certificates
    .filter((certificate) => certificate.issued_at === null)
    .filter((certificate) => certificate.subject_alternative_names.dns_names.includes(host))
    .reverse();
}
