import { z } from 'zod';
import {
  CIRCUIT_BREAKER_DEFAULTS,
  DEFAULT_COOKIE_PREFIX,
  DEFAULT_SAML_NAMEID_FORMAT,
  oauthProviderNames,
  SESSION_DEFAULTS,
  samlNameIdFormats,
  UINT32_MAX,
  WEBHOOK_PROVIDER_WITHOUT_SECRET,
  webhookProviders,
} from '../../schemas/route-modules.js';
import { exactlyOne, requires, withRules } from './cel.js';
import { secretKeyRef } from './common.js';
import { moduleEnabled } from './modules.js';

/**
 * The modules only HTTPS edge routes have, as a custom resource spells them. Secrets (webhook
 * secret, OAuth and OIDC client secrets) come from Secret keys. Omitted settings take the server's
 * defaults, which the descriptions name.
 */

const uint32 = (description: string) => z.int().min(0).max(UINT32_MAX).optional().meta({ description });

export const circuitBreakerModule = z.object({
  enabled: moduleEnabled,
  trippedDuration: uint32(
    `seconds to wait after tripping before re-evaluating upstream health; default ${CIRCUIT_BREAKER_DEFAULTS.tripped_duration}`,
  ),
  rollingWindow: uint32(
    `seconds of the statistical window; default ${CIRCUIT_BREAKER_DEFAULTS.rolling_window}`,
  ),
  numBuckets: z
    .int()
    .min(1)
    .max(128)
    .optional()
    .meta({
      description: `buckets of the rolling window, 1..128; default ${CIRCUIT_BREAKER_DEFAULTS.num_buckets}`,
    }),
  volumeThreshold: uint32(
    `requests in the window needed before the breaker may trip; default ${CIRCUIT_BREAKER_DEFAULTS.volume_threshold}`,
  ),
  errorThresholdPercentage: z
    .number()
    .min(0)
    .max(1)
    .optional()
    .meta({
      description: `error fraction that trips the breaker, 0..1.0 (not 0..100); default ${CIRCUIT_BREAKER_DEFAULTS.error_threshold_percentage}`,
    }),
});

export const compressionModule = z.object({ enabled: moduleEnabled });
export const websocketTcpConverterModule = z.object({ enabled: moduleEnabled });

/** RFC 9110 `token`: what a header field name may consist of. */
const headerName = z
  .string()
  .max(256)
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/);

function headersModule(target: string) {
  return z.object({
    enabled: moduleEnabled,
    add: z
      .record(z.string(), z.string().max(4096))
      .optional()
      .meta({ description: `headers injected into ${target}: name -> value`, maxProperties: 100 }),
    remove: z
      .array(headerName)
      .max(100)
      .optional()
      .meta({ description: `header names removed from ${target}` }),
  });
}
export const requestHeadersModule = headersModule('the request to the upstream');
export const responseHeadersModule = headersModule('the response to the client');

export const webhookVerificationModule = withRules(
  z.object({
    enabled: moduleEnabled,
    provider: z.enum(webhookProviders).meta({ description: 'the sender of the signed webhooks' }),
    secretRef: secretKeyRef.optional().meta({
      description: `the provider's signing secret; required unless provider is ${WEBHOOK_PROVIDER_WITHOUT_SECRET}`,
    }),
  }),
  {
    rule: `self.provider == '${WEBHOOK_PROVIDER_WITHOUT_SECRET}' || has(self.secretRef)`,
    message: `secretRef is required unless provider is ${WEBHOOK_PROVIDER_WITHOUT_SECRET}`,
    fieldPath: '.secretRef',
  },
);

const sessionFields = {
  enabled: moduleEnabled,
  optionsPassthrough: z
    .boolean()
    .optional()
    .meta({ description: 'do not enforce authentication on HTTP OPTIONS requests (CORS preflight)' }),
  cookiePrefix: z
    .string()
    .max(64)
    .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]*$/)
    .optional()
    .meta({ description: `prefix of the session cookie; default '${DEFAULT_COOKIE_PREFIX}'` }),
  inactivityTimeout: uint32(
    `seconds of inactivity before the session times out; default ${SESSION_DEFAULTS.inactivity_timeout}`,
  ),
  maximumDuration: uint32(`seconds a session may last at most; default ${SESSION_DEFAULTS.maximum_duration}`),
};

const scopes = z.array(z.string().min(1).max(255)).max(100).optional();
const DOMAIN = /^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

const oauthProviderFields = {
  clientId: z
    .string()
    .min(1)
    .max(255)
    .optional()
    .meta({ description: "your OAuth app's client id; omit (with clientSecretRef) to use the managed app" }),
  clientSecretRef: secretKeyRef.optional().meta({ description: "your OAuth app's client secret" }),
  scopes: scopes.meta({
    description: 'provider scopes; only with your own app (clientId and clientSecretRef)',
  }),
  emailAddresses: z
    .array(
      z
        .string()
        .max(320)
        .regex(/^[^@\s]+@[^@\s]+$/),
    )
    .max(1000)
    .optional()
    .meta({ description: 'email addresses allowed access' }),
  emailDomains: z
    .array(z.string().max(253).regex(DOMAIN))
    .max(1000)
    .optional()
    .meta({ description: 'email domains allowed access' }),
};

/** Spec (Errors rule 5): scopes need your own app; clientId and its secret come together. */
const appCredentialRules = [
  {
    rule: '!has(self.scopes) || size(self.scopes) == 0 || (has(self.clientId) && has(self.clientSecretRef))',
    message: 'scopes require both clientId and clientSecretRef',
    fieldPath: '.scopes',
  },
  requires('clientId', 'clientSecretRef'),
  requires('clientSecretRef', 'clientId'),
];

const oauthProvider = withRules(z.object(oauthProviderFields), ...appCredentialRules);
const oauthGithub = withRules(
  z.object({
    ...oauthProviderFields,
    teams: z
      .array(
        z
          .string()
          .max(140)
          .regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,38}\/[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/),
      )
      .max(1000)
      .optional()
      .meta({ description: "team slugs qualified by organization ('<org>/<team>'); members may access" }),
    organizations: z
      .array(
        z
          .string()
          .max(39)
          .regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,38}$/),
      )
      .max(1000)
      .optional()
      .meta({ description: 'organization slugs; members may access' }),
  }),
  ...appCredentialRules,
);

const providerFields = Object.fromEntries(
  oauthProviderNames.map((name) => [name, (name === 'github' ? oauthGithub : oauthProvider).optional()]),
) as { github: z.ZodOptional<typeof oauthGithub> } & {
  [P in Exclude<(typeof oauthProviderNames)[number], 'github'>]: z.ZodOptional<typeof oauthProvider>;
};

export const oauthModule = z.object({
  ...sessionFields,
  provider: withRules(z.object(providerFields), exactlyOne(...oauthProviderNames)).meta({
    description: 'the identity provider, exactly one member set',
  }),
  authCheckInterval: uint32(
    `seconds after which the identity provider is asked again whether the user may still access; default ${SESSION_DEFAULTS.auth_check_interval}`,
  ),
});

export const samlModule = z.object({
  ...sessionFields,
  idpMetadata: z
    .string()
    .min(1)
    .max(256 * 1024)
    .meta({ description: 'the full XML EntityDescriptor of the identity provider' }),
  forceAuthn: z
    .boolean()
    .optional()
    .meta({ description: 'the IdP must prompt for credentials even with a valid IdP session' }),
  allowIdpInitiated: z
    .boolean()
    .optional()
    .meta({ description: 'the IdP may initiate login, setting RelayState to the target URL' }),
  authorizedGroups: z
    .array(z.string().min(1).max(255))
    .max(100)
    .optional()
    .meta({ description: 'when non-empty, only members of a listed group may access' }),
  nameidFormat: z
    .enum(samlNameIdFormats)
    .optional()
    .meta({
      description: `name identifier format expected from the IdP; default ${DEFAULT_SAML_NAMEID_FORMAT}`,
    }),
});

export const oidcModule = z.object({
  ...sessionFields,
  issuer: z
    .string()
    .max(2048)
    .regex(/^https:\/\/[^?#\s]+$/)
    .meta({ description: 'the OpenID issuer: an https URL without query or fragment' }),
  clientId: z.string().min(1).max(255),
  clientSecretRef: secretKeyRef.meta({ description: "the OpenID client's secret" }),
  scopes: scopes.meta({ description: 'scopes requested besides openid, which is always requested' }),
});

const userAgentPatterns = (what: string) =>
  z
    .array(z.string().min(1).max(1024))
    .max(100)
    .optional()
    .meta({ description: `regular expressions (JavaScript syntax); a matching User-Agent is ${what}` });

export const userAgentFilterModule = z.object({
  enabled: moduleEnabled,
  allow: userAgentPatterns('let through'),
  deny: userAgentPatterns('refused'),
});

export type CircuitBreakerModule = z.output<typeof circuitBreakerModule>;
export type HeadersModule = z.output<typeof requestHeadersModule>;
export type WebhookVerificationModule = z.output<typeof webhookVerificationModule>;
export type OAuthModule = z.output<typeof oauthModule>;
export type SamlModule = z.output<typeof samlModule>;
export type OidcModule = z.output<typeof oidcModule>;
export type UserAgentFilterModule = z.output<typeof userAgentFilterModule>;
