import type { FastifyInstance } from 'fastify';
import type { LeafCertificateFields } from '../../crypto/x509.js';
import { loadX509 } from '../../crypto/x509-loader.js';
import {
  type TlsCertificate,
  tlsCertificate,
  tlsCertificateCreate,
  tlsCertificateList,
  tlsCertificateUpdate,
} from '../../schemas/tls-certificates.js';
import { badRequest, conflict } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import { insertRow, type Row } from '../store/rows.js';
import { defineCollection } from './collection.js';
import { defineCreateRoute } from './collection-create.js';
import { defineCollectionReads } from './collection-reads.js';
import { defineUpdateRoute } from './collection-update.js';
import { describedToWire, newDescribedRow } from './described-row.js';

const TLS_CERTIFICATES = defineCollection({
  table: 'tls_certificates',
  path: '/tls_certificates',
  kind: 'TLS certificate',
  name: 'TLSCertificate',
  plural: 'TLSCertificates',
  tag: 'TLS certificates',
  eventResource: 'tls_certificate',
  listKey: 'tls_certificates',
  item: tlsCertificate,
  list: tlsCertificateList,
  toWire: tlsCertificateToWire,
});

/** The secret box context of a certificate's private key: binds the ciphertext to its row and column. */
export function privateKeySealContext(id: string): string {
  return `tls_certificates:${id}:private_key_pem`;
}

export function tlsCertificateToWire(row: Row<'tls_certificates'>, ctx: RequestContext): TlsCertificate {
  const derived = JSON.parse(row.derived) as LeafCertificateFields;
  return {
    ...describedToWire(row, ctx, TLS_CERTIFICATES.path),
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
  defineCreateRoute(app, TLS_CERTIFICATES, {
    summary: 'Upload a TLS certificate chain (leaf first) and the private key of its leaf',
    body: tlsCertificateCreate,
    // Loaded before the write transaction, not inside it, the first time it is needed.
    prepare: () => loadX509(),
    handler: async ({ body, ctx, prepared: x509 }) => {
      const { checkChainOrder, leafCertificateFields, normalizedPem, parsePemChain, parsePrivateKey } = x509;
      const { privateKeyMatches, privateKeyType } = x509;
      const chain = parsePemChain(body.certificate_pem, 'certificate_pem');
      checkChainOrder(chain, 'certificate_pem');
      const [leaf] = chain;
      if (!leaf) throw new Error('parsePemChain returned an empty chain');
      const key = parsePrivateKey(body.private_key_pem, 'private_key_pem');
      const keyType = privateKeyType(key, 'private_key_pem');
      if (!privateKeyMatches(leaf, key)) {
        throw badRequest('private_key_pem: does not match the public key of the leaf certificate');
      }
      const described = newDescribedRow(TLS_CERTIFICATES.idPrefix, body, ctx);
      // Sealed as PKCS#8 whatever the uploaded encoding, so every stored key reads back one way.
      const keyPem = key.export({ type: 'pkcs8', format: 'pem' }).toString();
      const row: Row<'tls_certificates'> = {
        ...described,
        // Re-encoded: text between or around the PEM blocks is never stored or shown.
        certificate_pem: normalizedPem(chain),
        private_key_sealed: ctx.secretBox.seal(keyPem, privateKeySealContext(described.id)),
        derived: JSON.stringify(leafCertificateFields(leaf, keyType, null)),
      };
      await insertRow(ctx.db, TLS_CERTIFICATES.table, row);
      return tlsCertificateToWire(row, ctx);
    },
  });
  defineUpdateRoute(app, TLS_CERTIFICATES, {
    summary: 'Update the description or metadata of a TLS certificate',
    body: tlsCertificateUpdate,
    toChanges: (body) => body,
  });
  // No edge field of the spec refers to a TLS certificate; what a delete refuses is a certificate the
  // server itself obtained by ACME (`issued_at` set): it follows the names edges serve.
  defineCollectionReads(app, TLS_CERTIFICATES, {
    beforeDelete: async (row) => {
      const derived = JSON.parse(row.derived) as LeafCertificateFields;
      if (derived.issued_at === null) return;
      throw conflict(
        `id: ${row.id} is managed by the server (ACME, for ${derived.subject_alternative_names.dns_names.join(', ')}): ` +
          'it goes when no edge serves its names, or when a certificate uploaded for them takes over',
      );
    },
  });
}
