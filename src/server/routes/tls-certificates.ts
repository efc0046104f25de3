import type { FastifyInstance } from 'fastify';
import {
  type TlsCertificate,
  tlsCertificate,
  tlsCertificateCreate,
  tlsCertificateList,
  tlsCertificateUpdate,
} from '../../schemas/tls-certificates.js';
import {
  checkChainOrder,
  type LeafCertificateFields,
  leafCertificateFields,
  normalizedPem,
  parsePemChain,
  parsePrivateKey,
  privateKeyMatches,
  privateKeyType,
} from '../crypto/x509.js';
import { badRequest } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import { defineRoute } from '../http/route.js';
import {
  defineCollectionReads,
  defineUpdateRoute,
  describedToWire,
  insertRow,
  newDescribedRow,
  type Row,
} from './collection.js';

const TAG = 'TLS certificates';

/** The secret box context of a certificate's private key: binds the ciphertext to its row and column. */
export function privateKeySealContext(id: string): string {
  return `tls_certificates:${id}:private_key_pem`;
}

export function tlsCertificateToWire(row: Row<'tls_certificates'>, ctx: RequestContext): TlsCertificate {
  const derived = JSON.parse(row.derived) as LeafCertificateFields;
  return {
    ...describedToWire(row, ctx, '/tls_certificates'),
    certificate_pem: row.certificate_pem,
    subject_common_name: derived.subject_common_name,
    subject_alternative_names: derived.subject_alternative_names,
    issued_at: derived.issued_at,
    not_before: derived.not_before,
    not_after: derived.not_after,
    key_usages: derived.key_usages,
    extended_key_usages: derived.extended_key_usages,
    private_key_type: derived.private_key_type,
    issuer_common_name: derived.issuer_common_name,
    serial_number: derived.serial_number,
    subject_organization: derived.subject_organization,
    subject_organizational_unit: derived.subject_organizational_unit,
    subject_locality: derived.subject_locality,
    subject_province: derived.subject_province,
    subject_country: derived.subject_country,
  };
}

export async function tlsCertificateRoutes(app: FastifyInstance): Promise<void> {
  defineRoute(app, {
    method: 'POST',
    url: '/tls_certificates',
    operationId: 'createTLSCertificate',
    summary: 'Upload a TLS certificate chain (leaf first) and the private key of its leaf',
    tag: TAG,
    body: tlsCertificateCreate,
    status: 201,
    response: tlsCertificate,
    idempotent: true,
    event: { resource: 'tls_certificate', action: 'created' },
    handler: async ({ body, ctx }) => {
      const chain = parsePemChain(body.certificate_pem, 'certificate_pem');
      checkChainOrder(chain, 'certificate_pem');
      const [leaf] = chain;
      if (!leaf) throw new Error('parsePemChain returned an empty chain');
      const key = parsePrivateKey(body.private_key_pem, 'private_key_pem');
      const keyType = privateKeyType(key, 'private_key_pem');
      if (!privateKeyMatches(leaf, key)) {
        throw badRequest('private_key_pem: does not match the public key of the leaf certificate');
      }
      const described = newDescribedRow('cert', body, ctx);
      // Sealed as PKCS#8 whatever the uploaded encoding, so every stored key reads back one way.
      const keyPem = key.export({ type: 'pkcs8', format: 'pem' }).toString();
      const row: Row<'tls_certificates'> = {
        ...described,
        // Re-encoded: text between or around the PEM blocks is never stored or shown.
        certificate_pem: normalizedPem(chain),
        private_key_sealed: ctx.secretBox.seal(keyPem, privateKeySealContext(described.id)),
        derived: JSON.stringify(leafCertificateFields(leaf, keyType, null)),
      };
      await insertRow(ctx.db, 'tls_certificates', row);
      return tlsCertificateToWire(row, ctx);
    },
  });
  defineUpdateRoute(app, {
    table: 'tls_certificates',
    eventResource: 'tls_certificate',
    path: '/tls_certificates',
    kind: 'TLS certificate',
    name: 'TLSCertificate',
    tag: TAG,
    summary: 'Update the description or metadata of a TLS certificate',
    body: tlsCertificateUpdate,
    item: tlsCertificate,
    toChanges: (body) => body,
    toWire: tlsCertificateToWire,
  });
  // No edge field of the spec refers to a TLS certificate, so a delete has nothing to refuse.
  defineCollectionReads(app, {
    table: 'tls_certificates',
    eventResource: 'tls_certificate',
    path: '/tls_certificates',
    listKey: 'tls_certificates',
    kind: 'TLS certificate',
    name: 'TLSCertificate',
    plural: 'TLSCertificates',
    tag: TAG,
    item: tlsCertificate,
    list: tlsCertificateList,
    toWire: tlsCertificateToWire,
  });
}
