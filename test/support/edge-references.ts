import type { TestServer } from './server.js';

/**
 * Rows that edge modules reference (a tunnel-group backend, a certificate authority), inserted
 * straight into the database so edge suites do not depend on those route families.
 */
export async function insertEdgeReferences(
  t: TestServer,
  suffix: string,
): Promise<{ backendId: string; caId: string }> {
  const db = t.server.app.edgeward.db;
  const backendId = `bkdtg_${suffix.padStart(27, '0')}`;
  const caId = `ca_${suffix.padStart(27, '0')}`;
  const described = { created_at: '2026-01-01T00:00:00Z', description: '', metadata: '' };
  await db
    .insertInto('tunnel_group_backends')
    .values({ id: backendId, ...described, labels: '{"app":"web"}' })
    .execute();
  await db
    .insertInto('certificate_authorities')
    .values({
      id: caId,
      ...described,
      ca_pem: '-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n',
      subject_common_name: 'test',
      not_before: '2026-01-01T00:00:00Z',
      not_after: '2027-01-01T00:00:00Z',
      key_usages: '[]',
      extended_key_usages: '[]',
    })
    .execute();
  return { backendId, caId };
}
