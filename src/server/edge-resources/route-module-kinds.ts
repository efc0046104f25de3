import { loadX509 } from '../../crypto/x509-loader.js';
import { ROUTE_MODULE_NAMES, type RouteModuleName } from '../../schemas/route-module-table.js';
import {
  circuitBreakerModule,
  circuitBreakerModuleInput,
  compressionModule,
  compressionModuleInput,
  type OAuthModule,
  type OAuthModuleInput,
  type OAuthProviderName,
  type OidcModuleInput,
  oauthModule,
  oauthModuleInput,
  oauthProviderNames,
  oidcModule,
  oidcModuleInput,
  requestHeadersModule,
  requestHeadersModuleInput,
  responseHeadersModule,
  responseHeadersModuleInput,
  type SamlModuleInput,
  samlModule,
  samlModuleInput,
  userAgentFilterModule,
  userAgentFilterModuleInput,
  type WebhookVerificationModuleInput,
  webhookVerificationModule,
  webhookVerificationModuleInput,
  websocketTcpConverterModule,
  websocketTcpConverterModuleInput,
} from '../../schemas/route-modules.js';
import { conflict } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import {
  backendKind,
  defineModuleKind,
  ipRestrictionKind,
  type ModuleKind,
  type ModuleOwnerRef,
  policyKind,
  type WireScope,
} from './module-kinds.js';

/**
 * The modules of an HTTPS edge route. Secrets are sealed with the row and field they belong to
 * (`https_edge_routes:<id>:oauth.provider.github.client_secret`) and never shown again: the read
 * forms carry null in their place. Nothing here opens them; the data plane that verifies webhooks
 * and talks to identity providers is what they are kept for.
 */

const sealed = (ctx: RequestContext, owner: ModuleOwnerRef, field: string, secret: string): string =>
  ctx.secretBox.seal(secret, `${owner.table}:${owner.id}:${field}`);

const sealedOrNull = (ctx: RequestContext, owner: ModuleOwnerRef, field: string, secret?: string | null) =>
  secret ? sealed(ctx, owner, field, secret) : null;

export const circuitBreakerKind = defineModuleKind({
  name: 'circuit_breaker',
  operationName: 'CircuitBreaker',
  input: circuitBreakerModuleInput,
  output: circuitBreakerModule,
  toWire: (stored) => ({
    enabled: stored.enabled,
    tripped_duration: stored.tripped_duration,
    rolling_window: stored.rolling_window,
    num_buckets: stored.num_buckets,
    volume_threshold: stored.volume_threshold,
    error_threshold_percentage: stored.error_threshold_percentage,
  }),
});

export const compressionKind = defineModuleKind({
  name: 'compression',
  operationName: 'Compression',
  input: compressionModuleInput,
  output: compressionModule,
  toWire: (stored) => ({ enabled: stored.enabled }),
});

export const websocketTcpConverterKind = defineModuleKind({
  name: 'websocket_tcp_converter',
  operationName: 'WebsocketTCPConverter',
  input: websocketTcpConverterModuleInput,
  output: websocketTcpConverterModule,
  toWire: (stored) => ({ enabled: stored.enabled }),
});

export const requestHeadersKind = defineModuleKind({
  name: 'request_headers',
  operationName: 'RequestHeaders',
  input: requestHeadersModuleInput,
  output: requestHeadersModule,
  toWire: (stored) => ({ enabled: stored.enabled, add: stored.add, remove: stored.remove }),
});

export const responseHeadersKind = defineModuleKind({
  name: 'response_headers',
  operationName: 'ResponseHeaders',
  input: responseHeadersModuleInput,
  output: responseHeadersModule,
  toWire: (stored) => ({ enabled: stored.enabled, add: stored.add, remove: stored.remove }),
});

interface StoredWebhookVerification {
  enabled: boolean;
  provider: WebhookVerificationModuleInput['provider'];
  secret_sealed: string | null;
}

export const webhookVerificationKind = defineModuleKind({
  name: 'webhook_verification',
  operationName: 'WebhookVerification',
  input: webhookVerificationModuleInput,
  output: webhookVerificationModule,
  toStored: async (value, ctx, owner): Promise<StoredWebhookVerification> => ({
    enabled: value.enabled,
    provider: value.provider,
    secret_sealed: sealedOrNull(ctx, owner, 'webhook_verification.secret', value.secret),
  }),
  toWire: (stored: StoredWebhookVerification) => ({
    enabled: stored.enabled,
    provider: stored.provider,
    secret: null,
  }),
  toEdge: (stored: StoredWebhookVerification, open) => ({
    enabled: stored.enabled,
    provider: stored.provider,
    secret: stored.secret_sealed === null ? null : open('webhook_verification.secret', stored.secret_sealed),
  }),
});

type OAuthProviderInput = NonNullable<OAuthModuleInput['provider'][OAuthProviderName]>;
type StoredOAuthProvider = Omit<OAuthProviderInput, 'client_secret'> & {
  teams?: string[];
  organizations?: string[];
  client_secret_sealed: string | null;
};
type StoredOAuth = Omit<OAuthModuleInput, 'provider'> & {
  provider: Partial<Record<OAuthProviderName, StoredOAuthProvider>>;
};

function oauthProviderToWire(name: OAuthProviderName, stored: StoredOAuthProvider) {
  const common = {
    client_id: stored.client_id ?? null,
    client_secret: null,
    scopes: stored.scopes,
    email_addresses: stored.email_addresses,
    email_domains: stored.email_domains,
  };
  return name === 'github'
    ? { ...common, teams: stored.teams ?? [], organizations: stored.organizations ?? [] }
    : common;
}

export const oauthKind = defineModuleKind({
  name: 'oauth',
  operationName: 'OAuth',
  input: oauthModuleInput,
  output: oauthModule,
  toStored: async (value, ctx, owner): Promise<StoredOAuth> => {
    const provider: StoredOAuth['provider'] = {};
    for (const name of oauthProviderNames) {
      const member = value.provider[name];
      if (!member) continue;
      const { client_secret, ...rest } = member;
      provider[name] = {
        ...rest,
        client_secret_sealed: sealedOrNull(ctx, owner, `oauth.provider.${name}.client_secret`, client_secret),
      };
    }
    return { ...value, provider };
  },
  toWire: (stored: StoredOAuth) => ({
    enabled: stored.enabled,
    // Every member is present; those not in use are null (spec, OAuth module).
    provider: Object.fromEntries(
      oauthProviderNames.map((name) => {
        const member = stored.provider[name];
        return [name, member ? oauthProviderToWire(name, member) : null];
      }),
    ) as OAuthModule['provider'],
    options_passthrough: stored.options_passthrough,
    cookie_prefix: stored.cookie_prefix,
    inactivity_timeout: stored.inactivity_timeout,
    maximum_duration: stored.maximum_duration,
    auth_check_interval: stored.auth_check_interval,
  }),
  toEdge: (stored: StoredOAuth, open) => ({
    ...stored,
    provider: Object.fromEntries(
      Object.entries(stored.provider).map(([name, { client_secret_sealed, ...member }]) => [
        name,
        {
          ...member,
          client_secret:
            client_secret_sealed === null
              ? null
              : open(`oauth.provider.${name}.client_secret`, client_secret_sealed),
        },
      ]),
    ),
  }),
});

/** The service-provider side of a route's SAML module: generated once, kept across PUTs. */
interface SamlServiceProvider {
  route_id: string;
  request_signing_certificate_pem: string;
  request_signing_key_sealed: string;
}
type StoredSaml = SamlModuleInput & { service_provider: SamlServiceProvider };

/** A request-signing key pair made by `prepare`, before the transaction; sealed when stored. */
interface PreparedSigningKey {
  route_id: string;
  certificate_pem: string;
  private_key_pem: string;
}

/** Long-lived like most SP signing certificates: IdPs pin it from the metadata. */
const SAML_SIGNING_CERTIFICATE_DAYS = 3650;

function previousServiceProvider(routeId: string, previous: unknown): SamlServiceProvider | undefined {
  const provider = (previous as Partial<StoredSaml> | null | undefined)?.service_provider;
  return provider?.route_id === routeId ? provider : undefined;
}

/** The route's key pair as stored, or the prepared one sealed with the route it now belongs to. */
function serviceProvider(ctx: RequestContext, owner: ModuleOwnerRef): SamlServiceProvider {
  const kept = previousServiceProvider(owner.id, owner.previous);
  if (kept) return kept;
  const prepared = owner.prepared as PreparedSigningKey | undefined;
  if (prepared?.route_id !== owner.id) {
    // Only when the module was removed between `prepare` (which saw a key pair) and now.
    throw conflict('saml: the SAML module of this route changed while the request ran; retry it');
  }
  return {
    route_id: owner.id,
    request_signing_certificate_pem: prepared.certificate_pem,
    request_signing_key_sealed: sealed(ctx, owner, 'saml.request_signing_key', prepared.private_key_pem),
  };
}

/**
 * The SP URLs are public URLs the edge itself serves for the route, so they start with the edge's
 * origin and are derived on every read (a hostport added later moves them there). An edge without
 * a usable hostport has no public URL yet: the API's base URL stands in until it gets one.
 */
function serviceProviderUrl(ctx: RequestContext, scope: WireScope, routeId: string, endpoint: string) {
  const path = `/saml/${routeId}/${endpoint}`;
  return scope.edgeOrigin ? `${scope.edgeOrigin}${path}` : ctx.url(path);
}

export const samlKind = defineModuleKind({
  name: 'saml',
  operationName: 'SAML',
  input: samlModuleInput,
  output: samlModule,
  // RSA key generation takes a noticeable while: never inside the write transaction. Skipped when
  // the route has its key pair already (it is kept across PUTs).
  prepare: async (_value, owner): Promise<PreparedSigningKey | undefined> => {
    if (previousServiceProvider(owner.id, owner.previous)) return undefined;
    // RSA: the signature algorithm (rsa-sha256) every SAML identity provider accepts.
    const { selfSignedCertificate } = await loadX509();
    const generated = await selfSignedCertificate({
      commonName: `edgeward SAML SP ${owner.id}`,
      validDays: SAML_SIGNING_CERTIFICATE_DAYS,
      keyType: 'rsa',
    });
    return {
      route_id: owner.id,
      certificate_pem: generated.certificatePem,
      private_key_pem: generated.privateKeyPem,
    };
  },
  toStored: async (value, ctx, owner): Promise<StoredSaml> => ({
    ...value,
    service_provider: serviceProvider(ctx, owner),
  }),
  toWire: (stored: StoredSaml, ctx, scope) => {
    const routeId = stored.service_provider.route_id;
    const metadataUrl = serviceProviderUrl(ctx, scope, routeId, 'metadata');
    return {
      enabled: stored.enabled,
      options_passthrough: stored.options_passthrough,
      cookie_prefix: stored.cookie_prefix,
      inactivity_timeout: stored.inactivity_timeout,
      maximum_duration: stored.maximum_duration,
      idp_metadata: stored.idp_metadata,
      force_authn: stored.force_authn,
      allow_idp_initiated: stored.allow_idp_initiated,
      authorized_groups: stored.authorized_groups,
      nameid_format: stored.nameid_format,
      entity_id: metadataUrl,
      assertion_consumer_service_url: serviceProviderUrl(ctx, scope, routeId, 'acs'),
      single_logout_url: serviceProviderUrl(ctx, scope, routeId, 'slo'),
      request_signing_certificate_pem: stored.service_provider.request_signing_certificate_pem,
      metadata_url: metadataUrl,
      idp_metadata_url: '',
    };
  },
  // The edge serves the SP metadata; it signs nothing yet, so the signing key stays sealed here.
  toEdge: ({ service_provider, ...module }: StoredSaml) => ({
    ...module,
    request_signing_certificate_pem: service_provider.request_signing_certificate_pem,
  }),
});

type StoredOidc = Omit<OidcModuleInput, 'client_secret'> & { client_secret_sealed: string };

export const oidcKind = defineModuleKind({
  name: 'oidc',
  operationName: 'OIDC',
  input: oidcModuleInput,
  output: oidcModule,
  toStored: async ({ client_secret, ...rest }, ctx, owner): Promise<StoredOidc> => ({
    ...rest,
    client_secret_sealed: sealed(ctx, owner, 'oidc.client_secret', client_secret),
  }),
  toWire: (stored: StoredOidc) => ({
    enabled: stored.enabled,
    options_passthrough: stored.options_passthrough,
    cookie_prefix: stored.cookie_prefix,
    inactivity_timeout: stored.inactivity_timeout,
    maximum_duration: stored.maximum_duration,
    issuer: stored.issuer,
    client_id: stored.client_id,
    client_secret: null,
    scopes: stored.scopes,
  }),
  toEdge: ({ client_secret_sealed, ...module }: StoredOidc, open) => ({
    ...module,
    client_secret: open('oidc.client_secret', client_secret_sealed),
  }),
});

export const userAgentFilterKind = defineModuleKind({
  name: 'user_agent_filter',
  operationName: 'UserAgentFilter',
  input: userAgentFilterModuleInput,
  output: userAgentFilterModule,
  toWire: (stored) => ({ enabled: stored.enabled, allow: stored.allow, deny: stored.deny }),
});

/**
 * The server's side of each route module, keyed by the one list of route modules
 * (schemas/route-module-table.ts): a module missing here is a type error.
 */
const ROUTE_MODULE_KINDS: Record<RouteModuleName, ModuleKind> = {
  backend: backendKind,
  ip_restriction: ipRestrictionKind,
  circuit_breaker: circuitBreakerKind,
  compression: compressionKind,
  request_headers: requestHeadersKind,
  response_headers: responseHeadersKind,
  webhook_verification: webhookVerificationKind,
  oauth: oauthKind,
  saml: samlKind,
  oidc: oidcKind,
  websocket_tcp_converter: websocketTcpConverterKind,
  user_agent_filter: userAgentFilterKind,
  policy: policyKind,
};

/** Every module of an HTTPS edge route, in the order the read form lists them. */
export const HTTPS_EDGE_ROUTE_MODULES: readonly ModuleKind[] = ROUTE_MODULE_NAMES.map((name) => {
  const kind = ROUTE_MODULE_KINDS[name];
  if (kind.name !== name) throw new Error(`route module ${name} is served by the kind of ${kind.name}`);
  return kind;
});
