import type { FastifyInstance } from 'fastify';
import sshpk from 'sshpk';
import type { z } from 'zod';
import { type SshCertificateType, signSshCertificate } from '../../crypto/ssh-certificate.js';
import { parseSshPublicKey, SshPublicKeyError } from '../../crypto/ssh-public-key.js';
import { rfc3339 } from '../../lib/rfc3339.js';
import type { SshKeyType } from '../../schemas/ssh-certificate-authorities.js';
import {
  DEFAULT_SSH_USER_EXTENSIONS,
  parseRfc3339,
  type SshHostCertificate,
  type SshUserCertificate,
  sshHostCertificate,
  sshHostCertificateCreate,
  sshHostCertificateList,
  sshHostCertificateUpdate,
  sshUserCertificate,
  sshUserCertificateCreate,
  sshUserCertificateList,
  sshUserCertificateUpdate,
} from '../../schemas/ssh-certificates.js';
import { badReference, badRequest } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import { findRow, insertRow, type Row } from '../store/rows.js';
import { type Collection, defineCollection } from './collection.js';
import { defineCreateRoute } from './collection-create.js';
import { defineCollectionReads } from './collection-reads.js';
import { defineUpdateRoute } from './collection-update.js';
import { describedToWire, newDescribedRow } from './described-row.js';
import { SSH_CERTIFICATE_AUTHORITIES, sshCaPrivateKey } from './ssh-certificate-authorities.js';

const DAY_MS = 24 * 60 * 60 * 1000;

type CertificateTable = 'ssh_host_certificates' | 'ssh_user_certificates';
type CertificateRow = Row<CertificateTable>;

/**
 * Host and user certificates are alike in all but their type: the facts of each collection follow
 * from it (`/ssh_host_certificates`, "SSH host certificate", `ssh_host_certificate_created.v0`).
 */
function certificateCollection<Item extends z.ZodType, List extends z.ZodType>(facts: {
  type: SshCertificateType;
  /** Operation id stem: `SSHHostCertificate` -> createSSHHostCertificate, listSSHHostCertificates. */
  name: string;
  item: Item;
  list: List;
  toWire(row: CertificateRow, ctx: RequestContext): z.input<Item>;
}): Collection<CertificateTable, Item, List> {
  const { type, name } = facts;
  return defineCollection({
    table: `ssh_${type}_certificates`,
    path: `/ssh_${type}_certificates`,
    kind: `SSH ${type} certificate`,
    name,
    plural: `${name}s`,
    tag: `SSH ${type} certificates`,
    eventResource: `ssh_${type}_certificate`,
    listKey: `ssh_${type}_certificates`,
    item: facts.item,
    list: facts.list,
    toWire: facts.toWire,
  });
}

const HOST_CERTIFICATES = certificateCollection({
  type: 'host',
  name: 'SSHHostCertificate',
  item: sshHostCertificate,
  list: sshHostCertificateList,
  toWire: sshHostCertificateToWire,
});

const USER_CERTIFICATES = certificateCollection({
  type: 'user',
  name: 'SSHUserCertificate',
  item: sshUserCertificate,
  list: sshUserCertificateList,
  toWire: sshUserCertificateToWire,
});

/** What host and user certificates differ in, besides user certificates' options and extensions. */
const VARIANTS = {
  host: {
    defaultValidity: 'one year after creation',
    // A calendar year: 2030-02-28 + 1 year is 2031-02-28, the same time of day.
    defaultValidUntil: (created: Date) => {
      const until = new Date(created);
      until.setUTCFullYear(until.getUTCFullYear() + 1);
      return until;
    },
  },
  user: {
    defaultValidity: '24 hours after creation',
    defaultValidUntil: (created: Date) => new Date(created.getTime() + DAY_MS),
  },
} as const;

const CERTIFICATE_LINE = /^\S+-cert-v0\d@openssh\.com(\s|$)/;

/** The subject key's RFC 4253 blob and type, or a 400 naming `public_key`. */
function subjectKey(publicKey: string): { blob: Buffer; keyType: SshKeyType } {
  if (CERTIFICATE_LINE.test(publicKey)) {
    throw badRequest('public_key: is an OpenSSH certificate; send the plain public key to certify');
  }
  let keyType: SshKeyType;
  try {
    keyType = parseSshPublicKey(publicKey).type as SshKeyType;
  } catch (error) {
    if (error instanceof SshPublicKeyError) throw badRequest(`public_key: ${error.message}`);
    throw new Error('public_key: unexpected failure while parsing', { cause: error });
  }
  // The parser also reads PEM; a certificate request takes the form the spec names, nothing else.
  if (!/^(ssh-|ecdsa-sha2-)/.test(publicKey)) {
    throw badRequest('public_key: must be an OpenSSH authorized_keys line such as "ssh-ed25519 AAAA..."');
  }
  // Re-encoded from the parsed key rather than copied from the base64, so the blob is canonical.
  return { blob: sshpk.parseKey(publicKey, 'ssh').toBuffer('rfc4253'), keyType };
}

interface CertificateBody {
  description?: string | undefined;
  metadata?: string | undefined;
  ssh_certificate_authority_id: string;
  public_key: string;
  principals?: string[] | undefined;
  valid_after?: string | undefined;
  valid_until?: string | undefined;
  critical_options?: Record<string, string> | undefined;
  extensions?: Record<string, string> | undefined;
}

/** Sorted by name, as they are in the certificate, so the read form shows them in that order. */
function sortedByName(map: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(map).sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b))),
  );
}

/** Validates the request against the CA and the clock, signs the certificate, and stores it in `into`. */
async function issueCertificate(
  type: SshCertificateType,
  into: Pick<Collection<CertificateTable, z.ZodType, z.ZodType>, 'table' | 'idPrefix'>,
  body: CertificateBody,
  ctx: RequestContext,
): Promise<CertificateRow> {
  const variant = VARIANTS[type];
  const ca = await findRow(ctx.db, SSH_CERTIFICATE_AUTHORITIES.table, body.ssh_certificate_authority_id);
  if (!ca) {
    throw badReference(
      'ssh_certificate_authority_id',
      body.ssh_certificate_authority_id,
      SSH_CERTIFICATE_AUTHORITIES.kind,
    );
  }
  const publicKey = body.public_key.trim();
  const subject = subjectKey(publicKey);
  const described = newDescribedRow(into.idPrefix, body, ctx);
  const created = new Date(described.created_at);
  // The schema has already refused anything parseRfc3339 cannot read.
  const validAfter = body.valid_after === undefined ? created : (parseRfc3339(body.valid_after) as Date);
  const validUntil =
    body.valid_until === undefined
      ? variant.defaultValidUntil(created)
      : (parseRfc3339(body.valid_until) as Date);
  if (validUntil.getTime() <= validAfter.getTime()) {
    const defaulted =
      body.valid_until === undefined ? ` (when omitted it is ${variant.defaultValidity})` : '';
    throw badRequest(
      `valid_until: must be after valid_after; got ${rfc3339(validUntil)}${defaulted}, not after ${rfc3339(validAfter)}`,
    );
  }
  const principals = body.principals ?? [];
  const criticalOptions = sortedByName(body.critical_options ?? {});
  // Only an omitted map gets the defaults: an explicit {} is a certificate without extensions.
  const extensions =
    type === 'user'
      ? sortedByName(body.extensions ?? DEFAULT_SSH_USER_EXTENSIONS)
      : ({} as Record<string, string>);
  const signed = signSshCertificate(
    {
      type,
      subjectPublicKeyBlob: subject.blob,
      keyId: described.id,
      principals,
      validAfter,
      validBefore: validUntil,
      criticalOptions,
      extensions,
    },
    sshCaPrivateKey(ca, ctx),
  );
  const row = {
    ...described,
    ssh_certificate_authority_id: ca.id,
    public_key: publicKey,
    key_type: subject.keyType,
    principals: JSON.stringify(principals),
    critical_options: JSON.stringify(criticalOptions),
    extensions: JSON.stringify(extensions),
    valid_after: rfc3339(validAfter),
    valid_until: rfc3339(validUntil),
    certificate: signed.line,
  };
  await insertRow(ctx.db, into.table, row);
  return row;
}

export function sshHostCertificateToWire(row: CertificateRow, ctx: RequestContext): SshHostCertificate {
  return certificateToWire(row, ctx, HOST_CERTIFICATES.path);
}

export function sshUserCertificateToWire(row: CertificateRow, ctx: RequestContext): SshUserCertificate {
  return {
    ...certificateToWire(row, ctx, USER_CERTIFICATES.path),
    critical_options: JSON.parse(row.critical_options) as Record<string, string>,
    extensions: JSON.parse(row.extensions) as Record<string, string>,
  };
}

function certificateToWire(row: CertificateRow, ctx: RequestContext, path: string) {
  return {
    ...describedToWire(row, ctx, path),
    ssh_certificate_authority_id: row.ssh_certificate_authority_id,
    public_key: row.public_key,
    key_type: row.key_type as SshKeyType,
    principals: JSON.parse(row.principals) as string[],
    valid_after: row.valid_after,
    valid_until: row.valid_until,
    certificate: row.certificate,
  };
}

/**
 * Host and user certificates are served alike: POST signs one, PATCH changes only its description and
 * metadata (the signed certificate is immutable), GET list, GET one and DELETE.
 */
function defineCertificateRoutes<
  Item extends z.ZodType,
  List extends z.ZodType,
  Create extends z.ZodType<CertificateBody>,
  Update extends z.ZodType<{ description?: string | undefined; metadata?: string | undefined }>,
>(
  app: FastifyInstance,
  type: SshCertificateType,
  collection: Collection<CertificateTable, Item, List>,
  bodies: { create: Create; update: Update },
): void {
  defineCreateRoute(app, collection, {
    summary: `Sign a ${type} public key with an SSH certificate authority`,
    body: bodies.create,
    handler: async ({ body, ctx }) =>
      collection.toWire(await issueCertificate(type, collection, body, ctx), ctx),
  });
  defineUpdateRoute(app, collection, {
    summary: `Update the description or metadata of an ${collection.kind}`,
    body: bodies.update,
    toChanges: (body) => body,
  });
  defineCollectionReads(app, collection);
}

export async function sshCertificateRoutes(app: FastifyInstance): Promise<void> {
  defineCertificateRoutes(app, 'host', HOST_CERTIFICATES, {
    create: sshHostCertificateCreate,
    update: sshHostCertificateUpdate,
  });
  defineCertificateRoutes(app, 'user', USER_CERTIFICATES, {
    create: sshUserCertificateCreate,
    update: sshUserCertificateUpdate,
  });
}
