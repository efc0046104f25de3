import { z } from 'zod';
import { samlModuleInput } from '../../../schemas/route-modules.js';
import { Pages } from '../pages.js';
import type { EdgeRouteModule } from './route-module.js';

/** The SP side of SAML as the feed carries it: the module plus the certificate it publishes. */
const edgeSamlModule = samlModuleInput.extend({ request_signing_certificate_pem: z.string() });
export type EdgeSamlModule = z.output<typeof edgeSamlModule>;

/** Where the edge serves a route's SAML service-provider endpoints: `/saml/<route id>/<endpoint>`. */
export const SAML_PATH_PREFIX = '/saml/';

const escapeXml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c] ?? c,
  );

/** The certificate's base64 body, as `ds:X509Certificate` wants it. */
function certificateBody(pem: string): string {
  return pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
}

/**
 * The SP metadata the identity provider is given (SAML 2.0 metadata, §2.4.4): entity id, the
 * signing certificate, the NameID format and the ACS and SLO endpoints. The URLs are those the API
 * shows in the module's read form, with the origin the request came to.
 */
export function samlMetadataXml(routeId: string, module: EdgeSamlModule, origin: string): string {
  const base = `${origin}${SAML_PATH_PREFIX}${encodeURIComponent(routeId)}`;
  return `<?xml version="1.0" encoding="UTF-8"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${escapeXml(`${base}/metadata`)}">
  <md:SPSSODescriptor AuthnRequestsSigned="true" WantAssertionsSigned="true" protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:KeyDescriptor use="signing">
      <ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certificateBody(module.request_signing_certificate_pem)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo>
    </md:KeyDescriptor>
    <md:SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${escapeXml(`${base}/slo`)}"/>
    <md:NameIDFormat>${escapeXml(module.nameid_format)}</md:NameIDFormat>
    <md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${escapeXml(`${base}/acs`)}" index="0" isDefault="true"/>
  </md:SPSSODescriptor>
</md:EntityDescriptor>
`;
}

/** Answers `/saml/<route id><rest>`: the metadata; the sign-in endpoints are not built (501). */
export function samlMetadata(
  rest: string,
  routeId: string,
  module: EdgeSamlModule,
  origin: string,
): { status: number; headers: Record<string, string>; body: string } {
  if (rest === '/metadata') {
    return {
      status: 200,
      headers: { 'content-type': 'application/samlmetadata+xml; charset=utf-8', 'cache-control': 'no-cache' },
      body: samlMetadataXml(routeId, module, origin),
    };
  }
  return {
    status: 501,
    headers: { 'content-type': 'text/plain; charset=utf-8', 'edgeward-error': 'saml-not-built' },
    body: 'SAML sign-in is not built in this edge yet: only the service-provider metadata is served.\n',
  };
}

/**
 * `saml`: the SP metadata is served at the route's `metadata_url`; a SAML sign-in is not built, so
 * every other request of the route is refused (501) and nothing passes unauthenticated.
 */
export const samlModule: EdgeRouteModule<EdgeSamlModule> = {
  schema: edgeSamlModule,
  reservedPathPrefix: SAML_PATH_PREFIX,
  compile(config) {
    return {
      // Fail closed: a route that requires SAML sign-in is never served unauthenticated.
      onRequest: (exchange) => exchange.page(Pages.samlNotBuilt()),
      serveReservedPath: ({ exchange, rest, routeId }) => ({
        ...samlMetadata(
          rest,
          routeId,
          config,
          exchange.href.slice(0, exchange.href.indexOf('/', 'https://'.length)),
        ),
        outcome: 'saml',
      }),
    };
  },
};
