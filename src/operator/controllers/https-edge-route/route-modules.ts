import {
  CIRCUIT_BREAKER_DEFAULTS,
  type CircuitBreakerModule,
  type CompressionModule,
  DEFAULT_COOKIE_PREFIX,
  DEFAULT_SAML_NAMEID_FORMAT,
  type OAuthModule,
  type OidcModule,
  oauthProviderNames,
  type RequestHeadersModule,
  type SamlModule,
  SESSION_DEFAULTS,
  type UserAgentFilterModule,
  type WebhookVerificationModule,
  type WebsocketTcpConverterModule,
} from '../../../schemas/route-modules.js';
import type {
  CircuitBreakerModule as CircuitBreakerSpec,
  HeadersModule as HeadersSpec,
  OAuthModule as OAuthSpec,
  OidcModule as OidcSpec,
  SamlModule as SamlSpec,
  UserAgentFilterModule as UserAgentFilterSpec,
  WebhookVerificationModule as WebhookVerificationSpec,
} from '../../crds/route-modules.js';
import type { DesiredContext, ModuleAdapter } from '../shared/edges/edge-modules.js';
import { type SecretKeyRequest, type SecretValues, secretValue } from '../shared/secret-values.js';

/**
 * The modules only HTTPS edge routes have, as `ModuleAdapter`s: `desired` builds the API's write
 * form with the server's defaults filled in (so an omitted setting compares equal to what the
 * server stored), `current` turns the read form into that write form.
 *
 * Secrets (webhook secret, OAuth and OIDC client secrets) are write-only: the server reads them
 * back as null. `current` copies them from `desired`, so the rest of the module compares as usual;
 * whether the Secret itself changed is decided by its resourceVersion (see `sync.ts`).
 */

/** What a route module's `desired` needs: the edge context plus the Secret values read for the spec. */
export interface RouteDesiredContext extends DesiredContext {
  secrets: SecretValues;
}

/** An adapter of a route-only module (its `desired` may read Secret values). */
export interface RouteModuleAdapter<Spec, Read> extends ModuleAdapter<Spec, Read> {
  desired(spec: Spec | undefined, context: RouteDesiredContext): unknown;
}

/** The spec paths of the Secret-valued fields, as `readSecretValues` names them. */
export const WEBHOOK_SECRET_FIELD = 'spec.webhookVerification.secretRef';
export const OIDC_SECRET_FIELD = 'spec.oidc.clientSecretRef';
export const oauthSecretField = (provider: string) => `spec.oauth.provider.${provider}.clientSecretRef`;

/** The Secret keys a route spec names, each with its spec path. */
export function routeSecretRequests(spec: {
  webhookVerification?: WebhookVerificationSpec;
  oauth?: OAuthSpec;
  oidc?: OidcSpec;
}): SecretKeyRequest[] {
  const requests: SecretKeyRequest[] = [];
  const webhookRef = spec.webhookVerification?.secretRef;
  if (webhookRef) requests.push({ field: WEBHOOK_SECRET_FIELD, ref: webhookRef });
  const oauth = oauthMemberOf(spec.oauth);
  if (oauth?.member.clientSecretRef) {
    requests.push({ field: oauthSecretField(oauth.name), ref: oauth.member.clientSecretRef });
  }
  if (spec.oidc) requests.push({ field: OIDC_SECRET_FIELD, ref: spec.oidc.clientSecretRef });
  return requests;
}

/** The Secret value of a field when the spec names one, else null (the write forms' "no secret"). */
function optionalSecret(secrets: SecretValues, field: string, named: boolean): string | null {
  return named ? secretValue(secrets, field) : null;
}

export const circuitBreakerAdapter: ModuleAdapter<CircuitBreakerSpec, CircuitBreakerModule> = {
  desired: (spec) =>
    spec
      ? {
          enabled: spec.enabled ?? true,
          tripped_duration: spec.trippedDuration ?? CIRCUIT_BREAKER_DEFAULTS.tripped_duration,
          rolling_window: spec.rollingWindow ?? CIRCUIT_BREAKER_DEFAULTS.rolling_window,
          num_buckets: spec.numBuckets ?? CIRCUIT_BREAKER_DEFAULTS.num_buckets,
          volume_threshold: spec.volumeThreshold ?? CIRCUIT_BREAKER_DEFAULTS.volume_threshold,
          error_threshold_percentage:
            spec.errorThresholdPercentage ?? CIRCUIT_BREAKER_DEFAULTS.error_threshold_percentage,
        }
      : undefined,
  current: (read) =>
    read
      ? {
          enabled: read.enabled,
          tripped_duration: read.tripped_duration,
          rolling_window: read.rolling_window,
          num_buckets: read.num_buckets,
          volume_threshold: read.volume_threshold,
          error_threshold_percentage: read.error_threshold_percentage,
        }
      : undefined,
};

/** compression and websocket_tcp_converter: nothing but `enabled`. */
export const enabledOnlyAdapter: ModuleAdapter<
  { enabled?: boolean },
  CompressionModule | WebsocketTcpConverterModule
> = {
  desired: (spec) => (spec ? { enabled: spec.enabled ?? true } : undefined),
  current: (read) => (read ? { enabled: read.enabled } : undefined),
};

/** request_headers and response_headers (the same shape). */
export const headersAdapter: ModuleAdapter<HeadersSpec, RequestHeadersModule> = {
  desired: (spec) =>
    spec ? { enabled: spec.enabled ?? true, add: spec.add ?? {}, remove: spec.remove ?? [] } : undefined,
  current: (read) => (read ? { enabled: read.enabled, add: read.add, remove: read.remove } : undefined),
};

const secretOf = (desired: unknown): string | null =>
  (desired as { secret?: string | null } | undefined)?.secret ?? null;

export const webhookVerificationAdapter: RouteModuleAdapter<
  WebhookVerificationSpec,
  WebhookVerificationModule
> = {
  desired: (spec, { secrets }) =>
    spec
      ? {
          enabled: spec.enabled ?? true,
          provider: spec.provider,
          secret: optionalSecret(secrets, WEBHOOK_SECRET_FIELD, spec.secretRef !== undefined),
        }
      : undefined,
  current: (read, desired) =>
    read ? { enabled: read.enabled, provider: read.provider, secret: secretOf(desired) } : undefined,
};

/** The session settings OAuth, SAML and OIDC share, with the server's defaults. */
function sessionFields(spec: {
  enabled?: boolean;
  optionsPassthrough?: boolean;
  cookiePrefix?: string;
  inactivityTimeout?: number;
  maximumDuration?: number;
}) {
  return {
    enabled: spec.enabled ?? true,
    options_passthrough: spec.optionsPassthrough ?? false,
    cookie_prefix: spec.cookiePrefix ?? DEFAULT_COOKIE_PREFIX,
    inactivity_timeout: spec.inactivityTimeout ?? SESSION_DEFAULTS.inactivity_timeout,
    maximum_duration: spec.maximumDuration ?? SESSION_DEFAULTS.maximum_duration,
  };
}

const sessionFieldsOf = (read: {
  enabled: boolean;
  options_passthrough: boolean;
  cookie_prefix: string;
  inactivity_timeout: number;
  maximum_duration: number;
}) => ({
  enabled: read.enabled,
  options_passthrough: read.options_passthrough,
  cookie_prefix: read.cookie_prefix,
  inactivity_timeout: read.inactivity_timeout,
  maximum_duration: read.maximum_duration,
});

type OAuthProviderName = (typeof oauthProviderNames)[number];
type OAuthMemberSpec = NonNullable<OAuthSpec['provider'][OAuthProviderName]> & {
  teams?: string[];
  organizations?: string[];
};

/** The one identity provider an OAuth spec sets (CEL: exactly one). */
function oauthMemberOf(
  spec: OAuthSpec | undefined,
): { name: OAuthProviderName; member: OAuthMemberSpec } | undefined {
  if (!spec) return undefined;
  for (const name of oauthProviderNames) {
    const member = spec.provider[name] as OAuthMemberSpec | undefined;
    if (member) return { name, member };
  }
  return undefined;
}

type OAuthWrite = { provider: Record<string, { client_secret: string | null } | undefined> };

export const oauthAdapter: RouteModuleAdapter<OAuthSpec, OAuthModule> = {
  desired: (spec, { secrets }) => {
    const chosen = oauthMemberOf(spec);
    if (!spec || !chosen) return undefined;
    const { name, member } = chosen;
    const provider = {
      client_id: member.clientId ?? null,
      client_secret: optionalSecret(secrets, oauthSecretField(name), member.clientSecretRef !== undefined),
      scopes: member.scopes ?? [],
      email_addresses: member.emailAddresses ?? [],
      email_domains: member.emailDomains ?? [],
      ...(name === 'github' ? { teams: member.teams ?? [], organizations: member.organizations ?? [] } : {}),
    };
    return {
      ...sessionFields(spec),
      provider: { [name]: provider },
      auth_check_interval: spec.authCheckInterval ?? SESSION_DEFAULTS.auth_check_interval,
    };
  },
  current: (read, desired) => {
    if (!read) return undefined;
    const wanted = (desired as OAuthWrite | undefined)?.provider ?? {};
    const provider: Record<string, unknown> = {};
    for (const name of oauthProviderNames) {
      const member = read.provider[name];
      if (!member) continue;
      const { client_secret: _writeOnly, ...readable } = member;
      provider[name] = { ...readable, client_secret: wanted[name]?.client_secret ?? null };
    }
    return { ...sessionFieldsOf(read), provider, auth_check_interval: read.auth_check_interval };
  },
};

export const samlAdapter: ModuleAdapter<SamlSpec, SamlModule> = {
  desired: (spec) =>
    spec
      ? {
          ...sessionFields(spec),
          idp_metadata: spec.idpMetadata,
          force_authn: spec.forceAuthn ?? false,
          allow_idp_initiated: spec.allowIdpInitiated ?? false,
          authorized_groups: spec.authorizedGroups ?? [],
          nameid_format: spec.nameidFormat ?? DEFAULT_SAML_NAMEID_FORMAT,
        }
      : undefined,
  current: (read) =>
    read
      ? {
          ...sessionFieldsOf(read),
          idp_metadata: read.idp_metadata,
          force_authn: read.force_authn,
          allow_idp_initiated: read.allow_idp_initiated,
          authorized_groups: read.authorized_groups,
          nameid_format: read.nameid_format,
        }
      : undefined,
};

const clientSecretOf = (desired: unknown): string | null =>
  (desired as { client_secret?: string | null } | undefined)?.client_secret ?? null;

export const oidcAdapter: RouteModuleAdapter<OidcSpec, OidcModule> = {
  desired: (spec, { secrets }) =>
    spec
      ? {
          ...sessionFields(spec),
          issuer: spec.issuer,
          client_id: spec.clientId,
          client_secret: secretValue(secrets, OIDC_SECRET_FIELD),
          scopes: spec.scopes ?? [],
        }
      : undefined,
  current: (read, desired) =>
    read
      ? {
          ...sessionFieldsOf(read),
          issuer: read.issuer,
          client_id: read.client_id,
          client_secret: clientSecretOf(desired),
          scopes: read.scopes,
        }
      : undefined,
};

export const userAgentFilterAdapter: ModuleAdapter<UserAgentFilterSpec, UserAgentFilterModule> = {
  desired: (spec) =>
    spec ? { enabled: spec.enabled ?? true, allow: spec.allow ?? [], deny: spec.deny ?? [] } : undefined,
  current: (read) => (read ? { enabled: read.enabled, allow: read.allow, deny: read.deny } : undefined),
};

/** The SP fields of a route's SAML module the identity provider needs (status.saml). */
export function samlStatusOf(read: SamlModule | null | undefined) {
  if (!read) return undefined;
  return {
    entityId: read.entity_id,
    assertionConsumerServiceUrl: read.assertion_consumer_service_url,
    singleLogoutUrl: read.single_logout_url,
    metadataUrl: read.metadata_url,
    requestSigningCertificatePem: read.request_signing_certificate_pem,
  };
}
