import type { FastifyInstance } from 'fastify';
import { loadX509 } from '../../crypto/x509-loader.js';
import {
  type CertificateAuthority,
  certificateAuthority,
  certificateAuthorityCreate,
  certificateAuthorityList,
  certificateAuthorityUpdate,
} from '../../schemas/certificate-authorities.js';
import { moduleOwnersReferencing } from '../edge-resources/module-references.js';
import { inUse } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import type { Db } from '../store/database.js';
import { insertRow, type Row } from '../store/rows.js';
import { defineCollection } from './collection.js';
import { defineCreateRoute } from './collection-create.js';
import { defineCollectionReads } from './collection-reads.js';
import { defineUpdateRoute } from './collection-update.js';
import { describedToWire, newDescribedRow } from './described-row.js';

const CERTIFICATE_AUTHORITIES = defineCollection({
  table: 'certificate_authorities',
  path: '/certificate_authorities',
  kind: 'certificate authority',
  name: 'CertificateAuthority',
  plural: 'CertificateAuthorities',
  tag: 'Certificate authorities',
  eventResource: 'certificate_authority',
  listKey: 'certificate_authorities',
  item: certificateAuthority,
  list: certificateAuthorityList,
  toWire: certificateAuthorityToWire,
});

export function certificateAuthorityToWire(
  row: Row<'certificate_authorities'>,
  ctx: RequestContext,
): CertificateAuthority {
  return {
    ...describedToWire(row, ctx, CERTIFICATE_AUTHORITIES.path),
    ca_pem: row.ca_pem,
    subject_common_name: row.subject_common_name,
    not_before: row.not_before,
    not_after: row.not_after,
    key_usages: JSON.parse(row.key_usages) as string[],
    extended_key_usages: JSON.parse(row.extended_key_usages) as string[],
  };
}

/** Ids of the TLS and HTTPS edges whose mutual_tls module lists the certificate authority `id`. */
async function edgesTrustingCertificateAuthority(db: Db, id: string): Promise<string[]> {
  const owners = await moduleOwnersReferencing(db, ['tls_edges', 'https_edges'], id, (modules) => {
    const ids = (modules.mutual_tls as { certificate_authority_ids?: unknown } | null | undefined)
      ?.certificate_authority_ids;
    return Array.isArray(ids) && ids.includes(id);
  });
  return owners.map((owner) => owner.id);
}

export async function certificateAuthorityRoutes(app: FastifyInstance): Promise<void> {
  defineCreateRoute(app, CERTIFICATE_AUTHORITIES, {
    summary: 'Upload a certificate authority (one PEM-encoded CA certificate)',
    body: certificateAuthorityCreate,
    // Loaded before the write transaction, not inside it, the first time it is needed.
    prepare: () => loadX509(),
    handler: async ({
      body,
      ctx,
      prepared: { certificateAuthorityFields, normalizedPem, parseCaCertificate },
    }) => {
      const certificate = parseCaCertificate(body.ca_pem, 'ca_pem');
      const fields = certificateAuthorityFields(certificate);
      const row: Row<'certificate_authorities'> = {
        ...newDescribedRow(CERTIFICATE_AUTHORITIES.idPrefix, body, ctx),
        // Re-encoded: text around the PEM block is never stored or shown.
        ca_pem: normalizedPem([certificate]),
        subject_common_name: fields.subject_common_name,
        not_before: fields.not_before,
        not_after: fields.not_after,
        key_usages: JSON.stringify(fields.key_usages),
        extended_key_usages: JSON.stringify(fields.extended_key_usages),
      };
      await insertRow(ctx.db, CERTIFICATE_AUTHORITIES.table, row);
      return certificateAuthorityToWire(row, ctx);
    },
  });
  defineUpdateRoute(app, CERTIFICATE_AUTHORITIES, {
    summary: 'Update the description or metadata of a certificate authority',
    body: certificateAuthorityUpdate,
    toChanges: (body) => body,
  });
  defineCollectionReads(app, CERTIFICATE_AUTHORITIES, {
    // An edge verifying client certificates against a CA that is gone would fail closed for every
    // client; the caller removes it from the edges first.
    beforeDelete: async (row, ctx) => {
      const edgeIds = await edgesTrustingCertificateAuthority(ctx.db, row.id);
      if (edgeIds.length > 0) {
        throw inUse(
          `certificate authority ${row.id} is used by the mutual_tls module of ${edgeIds.join(', ')}; remove it there first`,
        );
      }
    },
  });
}
