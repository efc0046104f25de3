import { newId } from '../../crypto/ids.js';
import { hashToken, newSecretToken } from '../../crypto/tokens.js';
import { rfc3339 } from '../../lib/rfc3339.js';
import { idPrefixOf } from '../../schemas/id-prefixes.js';
import type { Db } from './database.js';
import { isUniqueViolation } from './unique-violation.js';
import { inWriteTransaction } from './write-transaction.js';

export const API_KEY_PREFIX = 'ewk';
/** Keys are stored as unsalted SHA-256, which is only safe for keys with plenty of entropy. */
export const MIN_ADMIN_KEY_LENGTH = 32;
const ENV_KEY_DESCRIPTION = 'admin key from EDGEWARD_ADMIN_API_KEY';

export interface BootstrapResult {
  adminUserId: string;
  /** Set only when this start generated the admin key: it is shown once and never stored in plain text. */
  generatedAdminKey?: string;
}

/**
 * On first start, creates the account's admin user and its first API key: the one given in
 * `EDGEWARD_ADMIN_API_KEY`, or a generated one returned here to be printed once. A different key
 * given on a later start replaces the one the variable held before, so rotating the Secret that
 * holds it both keeps the server reachable and revokes the old key.
 */
export async function bootstrapAdmin(db: Db, adminApiKey: string | undefined): Promise<BootstrapResult> {
  if (adminApiKey !== undefined && adminApiKey.length < MIN_ADMIN_KEY_LENGTH) {
    throw new Error(
      `EDGEWARD_ADMIN_API_KEY must be at least ${MIN_ADMIN_KEY_LENGTH} characters (e.g. openssl rand -base64 32)`,
    );
  }
  // Replicas starting together may both try to create the admin; the loser runs again and finds it.
  return bootstrapOnce(db, adminApiKey).catch((error: unknown) => {
    if (isUniqueViolation(error)) return bootstrapOnce(db, adminApiKey);
    throw error;
  });
}

async function bootstrapOnce(db: Db, adminApiKey: string | undefined): Promise<BootstrapResult> {
  return inWriteTransaction(db, async (trx) => {
    const now = rfc3339();
    let admin = await trx
      .selectFrom('users')
      .select('id')
      .where('is_admin', '=', 1)
      .orderBy('id')
      .executeTakeFirst();
    const firstStart = admin === undefined;
    if (!admin) {
      admin = { id: newId('usr') };
      await trx
        .insertInto('users')
        .values({ id: admin.id, created_at: now, name: 'admin', is_admin: 1 })
        .execute();
    }
    const addKey = async (token: string, description: string) => {
      await trx
        .insertInto('api_keys')
        .values({
          id: newId(idPrefixOf('/api_keys')),
          created_at: now,
          description,
          metadata: '',
          owner_id: admin.id,
          token_hash: hashToken(token),
        })
        .execute();
    };
    if (adminApiKey) {
      const known = await trx
        .selectFrom('api_keys')
        .select('id')
        .where('token_hash', '=', hashToken(adminApiKey))
        .executeTakeFirst();
      if (!known) {
        // A new value replaces the key the variable held before: rotating the Secret revokes the old key.
        await trx
          .deleteFrom('api_keys')
          .where('owner_id', '=', admin.id)
          .where('description', '=', ENV_KEY_DESCRIPTION)
          .execute();
        await addKey(adminApiKey, ENV_KEY_DESCRIPTION);
      }
      return { adminUserId: admin.id };
    }
    if (firstStart) {
      const generated = newSecretToken(API_KEY_PREFIX);
      await addKey(generated, 'admin key generated on first start');
      return { adminUserId: admin.id, generatedAdminKey: generated };
    }
    return { adminUserId: admin.id };
  });
}
