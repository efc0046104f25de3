import { z } from 'zod';
import { exactlyOneOf, ifThen } from './common.js';
import { moduleEnabledInput as enabled, moduleEnabled as enabledRead } from './edge-modules.js';

/**
 * The modules only HTTPS edge routes have (backend, ip_restriction and policy are shared, see
 * `edge-modules.ts`). Each has a write form (PUT bodies and the route bodies) and a read form.
 * Secrets (webhook `secret`, OAuth and OIDC `client_secret`) are write-only: the read forms show
 * them as null, and the server stores them sealed.
 */

const byteLength = (s: string) => Buffer.byteLength(s, 'utf8');
const maxBytes = (limit: number) => (s: string) => byteLength(s) <= limit;

export const UINT32_MAX = 4_294_967_295;
const uint32 = (description: string) =>
  z
    .number()
    .int('must be a whole number')
    .min(0, 'must be at least 0')
    .max(UINT32_MAX, `must be at most ${UINT32_MAX}`)
    .meta({ description });

// ---- circuit_breaker ------------------------------------------------------------------------

/** Defaults applied when a field is omitted (documented in docs/api.md and the OpenAPI document). */
export const CIRCUIT_BREAKER_DEFAULTS = {
  tripped_duration: 10,
  rolling_window: 10,
  num_buckets: 10,
  volume_threshold: 20,
  error_threshold_percentage: 0.5,
} as const;

const fraction = 'must be between 0 and 1.0 (a fraction, not a percentage)';

export const circuitBreakerModuleInput = z.strictObject({
  enabled,
  tripped_duration: uint32(
    'seconds to wait after tripping before re-evaluating upstream health; default 10',
  ).default(CIRCUIT_BREAKER_DEFAULTS.tripped_duration),
  rolling_window: uint32('seconds of the statistical window; default 10').default(
    CIRCUIT_BREAKER_DEFAULTS.rolling_window,
  ),
  num_buckets: z
    .number()
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(128, 'must be at most 128')
    .default(CIRCUIT_BREAKER_DEFAULTS.num_buckets)
    .meta({ description: 'buckets of the rolling window, 1..128; default 10' }),
  volume_threshold: uint32('requests in the window needed before the breaker may trip; default 20').default(
    CIRCUIT_BREAKER_DEFAULTS.volume_threshold,
  ),
  error_threshold_percentage: z
    .number()
    .min(0, fraction)
    .max(1, fraction)
    .default(CIRCUIT_BREAKER_DEFAULTS.error_threshold_percentage)
    .meta({ description: 'error fraction that trips the breaker, 0..1.0 (not 0..100); default 0.5' }),
});
export const circuitBreakerModule = z
  .object({
    enabled: enabledRead,
    tripped_duration: z.number().int(),
    rolling_window: z.number().int(),
    num_buckets: z.number().int(),
    volume_threshold: z.number().int(),
    error_threshold_percentage: z.number(),
  })
  .meta({ id: 'EndpointCircuitBreaker' });

// ---- compression, websocket_tcp_converter ---------------------------------------------------

export const compressionModuleInput = z.strictObject({ enabled });
export const compressionModule = z.object({ enabled: enabledRead }).meta({ id: 'EndpointCompression' });

export const websocketTcpConverterModuleInput = z.strictObject({ enabled });
export const websocketTcpConverterModule = z
  .object({ enabled: enabledRead })
  .meta({ id: 'EndpointWebsocketTCPConverter' });

// ---- request_headers, response_headers ------------------------------------------------------

/** RFC 9110 `token`: what a header field name may consist of. */
const HTTP_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const MAX_HEADERS = 100;
const headerNameMessage = 'must be an HTTP header name (RFC 9110 token characters only)';
const headerName = z.string().max(256, 'must be at most 256 characters').regex(HTTP_TOKEN, headerNameMessage);
const headerValue = z
  .string()
  .refine(maxBytes(4096), 'must be at most 4096 bytes')
  .refine((value) => !/[\r\n\0]/.test(value), 'must not contain CR, LF or NUL');

function headersModuleInput(direction: 'request' | 'response') {
  const target = direction === 'request' ? 'the request to the upstream' : 'the response to the client';
  return z
    .strictObject({
      enabled,
      add: z
        .record(z.string(), headerValue)
        .default({})
        .meta({
          description: `headers injected into ${target}: name -> value`,
          maxProperties: MAX_HEADERS,
          propertyNames: { pattern: HTTP_TOKEN.source, maxLength: 256 },
        }),
      remove: z
        .array(headerName)
        .max(MAX_HEADERS, `must list at most ${MAX_HEADERS} headers`)
        .default([])
        .meta({ description: `header names removed from ${target}` }),
    })
    .superRefine((value, ctx) => {
      const names = Object.keys(value.add ?? {});
      if (names.length > MAX_HEADERS) {
        ctx.addIssue({ code: 'custom', path: ['add'], message: `must have at most ${MAX_HEADERS} headers` });
      }
      // Header names are case-insensitive, so `X-A` and `x-a` would be the same header twice.
      const seen = new Map<string, string>();
      for (const name of names) {
        if (!HTTP_TOKEN.test(name) || name.length > 256) {
          ctx.addIssue({
            code: 'custom',
            path: ['add'],
            message: `${JSON.stringify(name)} ${headerNameMessage.replace('must be', 'is not')}`,
          });
          continue;
        }
        const first = seen.get(name.toLowerCase());
        if (first !== undefined) {
          ctx.addIssue({
            code: 'custom',
            path: ['add'],
            message: `${JSON.stringify(first)} and ${JSON.stringify(name)} name the same header (names are case-insensitive)`,
          });
        }
        seen.set(name.toLowerCase(), name);
      }
    });
}

export const requestHeadersModuleInput = headersModuleInput('request');
export const responseHeadersModuleInput = headersModuleInput('response');
const headersRead = {
  enabled: enabledRead,
  add: z.record(z.string(), z.string()),
  remove: z.array(z.string()),
};
export const requestHeadersModule = z.object(headersRead).meta({ id: 'EndpointRequestHeaders' });
export const responseHeadersModule = z.object(headersRead).meta({ id: 'EndpointResponseHeaders' });

// ---- webhook_verification -------------------------------------------------------------------

/** Supported senders of signed webhooks. `sns` (the cloud notification service) signs with its own certificate, so it needs no secret. */
export const webhookProviders = [
  'bitbucket',
  'circleci',
  'github',
  'gitlab',
  'hubspot',
  'intercom',
  'launchdarkly',
  'mailchimp',
  'mailgun',
  'pagerduty',
  'sendgrid',
  'shopify',
  'slack',
  'sns',
  'square',
  'stripe',
  'twilio',
  'xero',
  'zendesk',
] as const;
export const WEBHOOK_PROVIDER_WITHOUT_SECRET = 'sns';

export const webhookVerificationModuleInput = z
  .strictObject({
    enabled,
    provider: z.enum(webhookProviders),
    secret: z
      .string()
      .refine(maxBytes(4096), 'must be at most 4096 bytes')
      .nullable()
      .optional()
      .meta({ description: "the provider's signing secret; required unless provider is 'sns'; write-only" }),
  })
  .superRefine((value, ctx) => {
    if (value.provider === WEBHOOK_PROVIDER_WITHOUT_SECRET || value.provider === undefined) return;
    if (!value.secret) {
      ctx.addIssue({
        code: 'custom',
        path: ['secret'],
        message: `is required for provider '${value.provider}'`,
      });
    }
  })
  .meta(
    ifThen(
      { properties: { provider: { not: { const: WEBHOOK_PROVIDER_WITHOUT_SECRET } } } },
      { properties: { secret: { type: 'string', minLength: 1 } }, required: ['secret'] },
    ),
  );
export const webhookVerificationModule = z
  .object({
    enabled: enabledRead,
    provider: z.string(),
    secret: z.null().meta({ description: 'write-only: always null in responses' }),
  })
  .meta({ id: 'EndpointWebhookValidation' });

// ---- session fields shared by oauth, saml and oidc ------------------------------------------

export const DEFAULT_COOKIE_PREFIX = 'edgeward.';
/** Session defaults: 2 days of inactivity, 30 days at most, recheck the identity provider hourly. */
export const SESSION_DEFAULTS = {
  inactivity_timeout: 172_800,
  maximum_duration: 2_592_000,
  auth_check_interval: 3_600,
} as const;

const COOKIE_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{0,64}$/;
const sessionInputFields = {
  enabled,
  options_passthrough: z
    .boolean()
    .default(false)
    .meta({ description: 'do not enforce authentication on HTTP OPTIONS requests (CORS preflight)' }),
  cookie_prefix: z
    .string()
    .regex(COOKIE_NAME, 'must be at most 64 characters valid in a cookie name (RFC 6265 token)')
    .default(DEFAULT_COOKIE_PREFIX)
    .meta({ description: `prefix of the session cookie; default '${DEFAULT_COOKIE_PREFIX}'` }),
  inactivity_timeout: uint32(
    'seconds of inactivity before the session times out; default 172800 (2 days)',
  ).default(SESSION_DEFAULTS.inactivity_timeout),
  maximum_duration: uint32('seconds a session may last at most; default 2592000 (30 days)').default(
    SESSION_DEFAULTS.maximum_duration,
  ),
};
const sessionReadFields = {
  enabled: enabledRead,
  options_passthrough: z.boolean(),
  cookie_prefix: z.string(),
  inactivity_timeout: z.number().int(),
  maximum_duration: z.number().int(),
};

// ---- oauth ----------------------------------------------------------------------------------

export const oauthProviderNames = [
  'github',
  'facebook',
  'microsoft',
  'google',
  'linkedin',
  'gitlab',
  'twitch',
  'amazon',
] as const;
export type OAuthProviderName = (typeof oauthProviderNames)[number];

const DOMAIN =
  /^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const GITHUB_ORG = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/;
const GITHUB_TEAM = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;
const list = <T extends z.ZodType>(item: T, max = 1000) =>
  z.array(item).max(max, `must list at most ${max} entries`).default([]);

const oauthProviderInputFields = {
  client_id: z
    .string()
    .min(1, 'must not be empty')
    .max(255, 'must be at most 255 characters')
    .nullable()
    .optional()
    .meta({ description: "your OAuth app's client id; omit to use the service's managed app" }),
  client_secret: z
    .string()
    .min(1, 'must not be empty')
    .refine(maxBytes(4096), 'must be at most 4096 bytes')
    .nullable()
    .optional()
    .meta({ description: "your OAuth app's client secret; write-only" }),
  scopes: list(z.string().min(1, 'must not be empty').max(255, 'must be at most 255 characters'), 100),
  email_addresses: list(z.email('must be an email address')),
  email_domains: list(z.string().regex(DOMAIN, 'must be a domain name, e.g. example.com')),
};

/** Spec (Errors rule 5): scopes need your own app; client_id and client_secret come together. */
function checkAppCredentials(
  value: { client_id?: string | null; client_secret?: string | null; scopes?: string[] },
  ctx: z.RefinementCtx,
): void {
  if ((value.scopes ?? []).length > 0 && !(value.client_id && value.client_secret)) {
    ctx.addIssue({
      code: 'custom',
      path: ['scopes'],
      message: 'may only be set with both client_id and client_secret',
    });
  }
  if (value.client_id && !value.client_secret) {
    ctx.addIssue({ code: 'custom', path: ['client_secret'], message: 'is required when client_id is set' });
  }
  if (value.client_secret && !value.client_id) {
    ctx.addIssue({ code: 'custom', path: ['client_id'], message: 'is required when client_secret is set' });
  }
}

/** `checkAppCredentials` for the document: scopes need client_id and client_secret, each needs the other. */
const APP_CREDENTIAL_RULES = {
  allOf: [
    ifThen(
      { properties: { scopes: { minItems: 1 } }, required: ['scopes'] },
      {
        properties: { client_id: { type: 'string' }, client_secret: { type: 'string' } },
        required: ['client_id', 'client_secret'],
      },
    ),
    ifThen(
      { properties: { client_id: { type: 'string' } }, required: ['client_id'] },
      { properties: { client_secret: { type: 'string' } }, required: ['client_secret'] },
    ),
    ifThen(
      { properties: { client_secret: { type: 'string' } }, required: ['client_secret'] },
      { properties: { client_id: { type: 'string' } }, required: ['client_id'] },
    ),
  ],
};

const oauthProviderInput = z
  .strictObject(oauthProviderInputFields)
  .superRefine(checkAppCredentials)
  .meta(APP_CREDENTIAL_RULES);
const oauthGithubInput = z
  .strictObject({
    ...oauthProviderInputFields,
    teams: list(z.string().regex(GITHUB_TEAM, "must be '<org>/<team>', e.g. 'acme/platform'")).meta({
      description: 'team slugs qualified by organization; members of any listed team may access',
    }),
    organizations: list(z.string().regex(GITHUB_ORG, 'must be a GitHub organization slug')).meta({
      description: 'organization slugs; members of any listed organization may access',
    }),
  })
  .superRefine(checkAppCredentials)
  .meta(APP_CREDENTIAL_RULES);

export const oauthProvidersInput = z
  .strictObject({
    github: oauthGithubInput.nullable().optional(),
    facebook: oauthProviderInput.nullable().optional(),
    microsoft: oauthProviderInput.nullable().optional(),
    google: oauthProviderInput.nullable().optional(),
    linkedin: oauthProviderInput.nullable().optional(),
    gitlab: oauthProviderInput.nullable().optional(),
    twitch: oauthProviderInput.nullable().optional(),
    amazon: oauthProviderInput.nullable().optional(),
  })
  .superRefine((value, ctx) => {
    const set = oauthProviderNames.filter((name) => value[name] !== undefined && value[name] !== null);
    if (set.length === 1) return;
    ctx.addIssue({
      code: 'custom',
      path: [],
      message:
        set.length === 0
          ? `must set exactly one of ${oauthProviderNames.join(', ')}`
          : `must set exactly one identity provider; got ${set.join(', ')}`,
    });
  })
  .meta({ oneOf: exactlyOneOf(oauthProviderNames) });

export const oauthModuleInput = z.strictObject({
  enabled,
  provider: oauthProvidersInput,
  options_passthrough: sessionInputFields.options_passthrough,
  cookie_prefix: sessionInputFields.cookie_prefix,
  inactivity_timeout: sessionInputFields.inactivity_timeout,
  maximum_duration: sessionInputFields.maximum_duration,
  auth_check_interval: uint32(
    'seconds after which the identity provider is asked again whether the user may still access; default 3600',
  ).default(SESSION_DEFAULTS.auth_check_interval),
});

const oauthProviderReadFields = {
  client_id: z.string().nullable(),
  client_secret: z.null().meta({ description: 'write-only: always null in responses' }),
  scopes: z.array(z.string()),
  email_addresses: z.array(z.string()),
  email_domains: z.array(z.string()),
};
const oauthProviderRead = z.object(oauthProviderReadFields);
const oauthGithubRead = z
  .object({ ...oauthProviderReadFields, teams: z.array(z.string()), organizations: z.array(z.string()) })
  .meta({ id: 'EndpointOAuthGitHub' });
const providerRead = (id: string) => oauthProviderRead.meta({ id }).nullable();
export const oauthProviders = z
  .object({
    github: oauthGithubRead.nullable(),
    facebook: providerRead('EndpointOAuthFacebook'),
    microsoft: providerRead('EndpointOAuthMicrosoft'),
    google: providerRead('EndpointOAuthGoogle'),
    linkedin: providerRead('EndpointOAuthLinkedIn'),
    gitlab: providerRead('EndpointOAuthGitLab'),
    twitch: providerRead('EndpointOAuthTwitch'),
    amazon: providerRead('EndpointOAuthAmazon'),
  })
  .meta({ id: 'EndpointOAuthProvider' });
export const oauthModule = z
  .object({
    enabled: enabledRead,
    provider: oauthProviders,
    options_passthrough: z.boolean(),
    cookie_prefix: z.string(),
    inactivity_timeout: z.number().int(),
    maximum_duration: z.number().int(),
    auth_check_interval: z.number().int(),
  })
  .meta({ id: 'EndpointOAuth' });

// ---- saml -----------------------------------------------------------------------------------

export const samlNameIdFormats = [
  'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
  'urn:oasis:names:tc:SAML:2.0:nameid-format:transient',
  'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
  'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
] as const;
export const DEFAULT_SAML_NAMEID_FORMAT = samlNameIdFormats[0];

/** A start tag of `EntityDescriptor`, with or without a namespace prefix (`md:EntityDescriptor`). */
const ENTITY_DESCRIPTOR_TAG = /<(?:[A-Za-z_][\w.-]*:)?EntityDescriptor[\s/>]/;
const MAX_IDP_METADATA_BYTES = 256 * 1024;

/**
 * A minimal check, not a full XML parse: the text is markup that contains an EntityDescriptor
 * element. DTDs are refused outright, since whatever parses the metadata later should never have to
 * expand entities (XXE, billion laughs).
 */
export const idpMetadata = z
  .string()
  .refine(maxBytes(MAX_IDP_METADATA_BYTES), `must be at most ${MAX_IDP_METADATA_BYTES} bytes`)
  .refine(
    (xml) =>
      xml
        .trimStart()
        .replace(/^\uFEFF/, '')
        .startsWith('<') && ENTITY_DESCRIPTOR_TAG.test(xml),
    "must be the identity provider's SAML metadata: XML with an EntityDescriptor element",
  )
  .refine((xml) => !/<!DOCTYPE/i.test(xml), 'must not contain a DOCTYPE declaration')
  .meta({ description: 'the full XML EntityDescriptor of the identity provider', format: 'saml-metadata' });

export const samlModuleInput = z.strictObject({
  ...sessionInputFields,
  idp_metadata: idpMetadata,
  force_authn: z
    .boolean()
    .default(false)
    .meta({ description: 'the IdP must prompt for credentials even with a valid IdP session' }),
  allow_idp_initiated: z
    .boolean()
    .default(false)
    .meta({ description: 'the IdP may initiate login, setting RelayState to the target URL' }),
  authorized_groups: list(
    z.string().min(1, 'must not be empty').max(255, 'must be at most 255 characters'),
    100,
  ).meta({ description: 'when non-empty, only members of a listed group may access' }),
  nameid_format: z
    .enum(samlNameIdFormats)
    .default(DEFAULT_SAML_NAMEID_FORMAT)
    .meta({
      description: `name identifier format expected from the IdP; default ${DEFAULT_SAML_NAMEID_FORMAT}`,
    }),
});
export const samlModule = z
  .object({
    ...sessionReadFields,
    idp_metadata: z.string(),
    force_authn: z.boolean(),
    allow_idp_initiated: z.boolean(),
    authorized_groups: z.array(z.string()),
    nameid_format: z.string(),
    entity_id: z.string().meta({ description: 'read-only; the SP entity id, the same URL as metadata_url' }),
    assertion_consumer_service_url: z.string().meta({ description: 'read-only' }),
    single_logout_url: z.string().meta({ description: 'read-only' }),
    request_signing_certificate_pem: z
      .string()
      .meta({ description: 'read-only; self-signed certificate of the key that signs SAML requests' }),
    metadata_url: z.string().meta({ description: 'read-only' }),
    idp_metadata_url: z.string().meta({ description: 'always the empty string' }),
  })
  .meta({ id: 'EndpointSAML' });

// ---- oidc -----------------------------------------------------------------------------------

function isIssuerUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'https:' && !text.includes('?') && !text.includes('#');
  } catch {
    return false;
  }
}

export const oidcModuleInput = z.strictObject({
  ...sessionInputFields,
  issuer: z
    .string()
    .max(2048, 'must be at most 2048 characters')
    .refine(isIssuerUrl, 'must be an https URL without query or fragment (the OpenID issuer identifier)')
    .meta({ format: 'uri', pattern: '^https://[^?#]+$' }),
  client_id: z.string().min(1, 'must not be empty').max(255, 'must be at most 255 characters'),
  client_secret: z
    .string()
    .min(1, 'must not be empty')
    .refine(maxBytes(4096), 'must be at most 4096 bytes')
    .meta({ description: 'write-only' }),
  scopes: list(z.string().min(1, 'must not be empty').max(255, 'must be at most 255 characters'), 100).meta({
    description: 'scopes requested besides openid, which is always requested',
  }),
});
export const oidcModule = z
  .object({
    ...sessionReadFields,
    issuer: z.string(),
    client_id: z.string(),
    client_secret: z.null().meta({ description: 'write-only: always null in responses' }),
    scopes: z.array(z.string()),
  })
  .meta({ id: 'EndpointOIDC' });

// ---- user_agent_filter ----------------------------------------------------------------------

const userAgentPattern = z
  .string()
  .min(1, 'must not be empty')
  .max(1024, 'must be at most 1024 characters')
  .superRefine((pattern, ctx) => {
    try {
      new RegExp(pattern);
    } catch (error) {
      ctx.addIssue({
        code: 'custom',
        message: `is not a valid regular expression (${(error as Error).message})`,
      });
    }
  })
  .meta({ format: 'regex' });

export const userAgentFilterModuleInput = z.strictObject({
  enabled,
  allow: list(userAgentPattern, 100).meta({
    description: 'regular expressions (JavaScript syntax); a matching User-Agent is let through',
  }),
  deny: list(userAgentPattern, 100).meta({
    description: 'regular expressions (JavaScript syntax); a matching User-Agent is refused',
  }),
});
export const userAgentFilterModule = z
  .object({ enabled: enabledRead, allow: z.array(z.string()), deny: z.array(z.string()) })
  .meta({ id: 'EndpointUserAgentFilter' });

export type CircuitBreakerModuleInput = z.output<typeof circuitBreakerModuleInput>;
export type CompressionModuleInput = z.output<typeof compressionModuleInput>;
export type WebsocketTcpConverterModuleInput = z.output<typeof websocketTcpConverterModuleInput>;
export type HeadersModuleInput = z.output<typeof requestHeadersModuleInput>;
export type WebhookVerificationModuleInput = z.output<typeof webhookVerificationModuleInput>;
export type OAuthModuleInput = z.output<typeof oauthModuleInput>;
export type SamlModuleInput = z.output<typeof samlModuleInput>;
export type OidcModuleInput = z.output<typeof oidcModuleInput>;
export type UserAgentFilterModuleInput = z.output<typeof userAgentFilterModuleInput>;
export type CircuitBreakerModule = z.infer<typeof circuitBreakerModule>;
export type CompressionModule = z.infer<typeof compressionModule>;
export type WebsocketTcpConverterModule = z.infer<typeof websocketTcpConverterModule>;
export type RequestHeadersModule = z.infer<typeof requestHeadersModule>;
export type ResponseHeadersModule = z.infer<typeof responseHeadersModule>;
export type WebhookVerificationModule = z.infer<typeof webhookVerificationModule>;
export type OAuthModule = z.infer<typeof oauthModule>;
export type SamlModule = z.infer<typeof samlModule>;
export type OidcModule = z.infer<typeof oidcModule>;
export type UserAgentFilterModule = z.infer<typeof userAgentFilterModule>;
