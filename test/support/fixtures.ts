import { newId } from '../../src/crypto/ids.js';
import type { TunnelSessionsTable } from '../../src/server/store/tables.js';
import type { TestServer } from './server.js';

/** A SAML identity provider's metadata, as a route's `saml.idp_metadata` takes it. */
export const IDP_METADATA = `<?xml version="1.0" encoding="UTF-8"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example.com/metadata">
  <md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example.com/sso"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>`;

/** A tunnel session row, inserted the way the agent listener records one (agents cannot connect yet). */
export async function insertTunnelSession(
  t: TestServer,
  overrides: Partial<TunnelSessionsTable> = {},
): Promise<TunnelSessionsTable> {
  const row: TunnelSessionsTable = {
    id: newId('ts'),
    started_at: '2024-05-01T12:00:00Z',
    agent_version: '3.5.0',
    credential_id: newId('cr'),
    ip: '203.0.113.9',
    metadata: null,
    os: 'linux',
    region: 'us',
    transport: 'svc/2',
    edge_id: '',
    labels: '{}',
    ...overrides,
  };
  await t.server.app.edgeward.db.insertInto('tunnel_sessions').values(row).execute();
  return row;
}
