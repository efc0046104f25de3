import { createPrivateKey } from 'node:crypto';
import type { SecretBox } from '../../crypto/secret-box.js';
import { openAccountKey } from '../acme/acme-account.js';
import { buildEdgeConfig } from '../data-plane/snapshot.js';
import { openTarget } from '../events/stored-target.js';
import { privateKeyContext as sshCaPrivateKeyContext } from '../routes/ssh-certificate-authorities.js';
import type { Db } from '../store/database.js';

export interface SealedSecretCounts {
  /** TLS certificates' private keys and HTTPS routes' module secrets: what every edge is sent. */
  edge_config_tls_private_keys: number;
  ssh_certificate_authority_keys: number;
  event_destination_targets: number;
  acme_account_keys: number;
}

/**
 * Opens every sealed secret the server serves from, with the server's own code paths, and counts
 * them: the proof that a key belongs to a database. It throws (naming the row) on the first secret
 * the key does not open. Replayable idempotent responses are sealed too but expire; they are not
 * checked.
 */
export async function openSealedSecrets(db: Db, secretBox: SecretBox): Promise<SealedSecretCounts> {
  // The edges' snapshot opens each TLS private key and each route module's secrets.
  const edgeConfig = await buildEdgeConfig(db, secretBox).catch((cause: unknown) => {
    throw new Error('the key does not open the TLS private keys and route secrets the edges are sent', {
      cause,
    });
  });
  const authorities = await db
    .selectFrom('ssh_certificate_authorities')
    .select(['id', 'private_key_sealed'])
    .execute();
  for (const row of authorities) {
    try {
      createPrivateKey(secretBox.open(row.private_key_sealed, sshCaPrivateKeyContext(row.id)));
    } catch (cause) {
      throw new Error(`private key of SSH certificate authority ${row.id} cannot be opened`, { cause });
    }
  }
  const destinations = await db.selectFrom('event_destinations').select(['id', 'target_sealed']).execute();
  for (const row of destinations) openTarget(secretBox, row.id, row.target_sealed);
  const accounts = await db.selectFrom('acme_accounts').select(['directory_url', 'key_sealed']).execute();
  for (const row of accounts) {
    try {
      createPrivateKey(openAccountKey(secretBox, row));
    } catch (cause) {
      throw new Error(`the ACME account key for ${row.directory_url} cannot be opened`, { cause });
    }
  }
  return {
    edge_config_tls_private_keys: edgeConfig.tls_certificates.length,
    ssh_certificate_authority_keys: authorities.length,
    event_destination_targets: destinations.length,
    acme_account_keys: accounts.length,
  };
}
