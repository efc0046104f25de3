import { describe, expect, it } from 'vitest';
import type { RequestContext } from '../http/context.js';
import { samlKind } from './route-module-kinds.js';

const IDP_METADATA = '<EntityDescriptor entityID="https://idp.example.com"/>';
const owner = { table: 'https_edge_routes', id: 'edghtsrt_1' };
const value = samlKind.input.parse({ idp_metadata: IDP_METADATA });

describe('SAML request-signing key pair', () => {
  // Over HTTP this needs a DELETE of the module to commit between a PUT's prepare step (which saw a
  // key pair, so made none) and its transaction: a race no test can time, so the branch is tested here.
  it('refuses with a 409 to retry when the key pair vanished after the prepare step', async () => {
    const stored = samlKind.toStored?.(value, {} as RequestContext, { ...owner, previous: undefined });
    await expect(stored).rejects.toMatchObject({
      statusCode: 409,
      message: 'saml: the SAML module of this route changed while the request ran; retry it',
    });
  });

  it('prepares nothing for a route that has its key pair, and one named after the route otherwise', async () => {
    const kept = {
      service_provider: {
        route_id: owner.id,
        request_signing_certificate_pem: 'pem',
        request_signing_key_sealed: 'x',
      },
    };
    expect(await samlKind.prepare?.(value, { id: owner.id, previous: kept })).toBeUndefined();
    // A key pair copied from another route is not this route's.
    const copied = await samlKind.prepare?.(value, { id: 'edghtsrt_2', previous: kept });
    expect(copied).toMatchObject({ route_id: 'edghtsrt_2' });
    expect((copied as { certificate_pem: string }).certificate_pem).toMatch(/^-----BEGIN CERTIFICATE-----/);
  });
});
