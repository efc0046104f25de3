import { describe, expect, it } from 'vitest';
import type { OAuthModule, WebhookVerificationModule } from '../../../schemas/route-modules.js';
import type { SecretValues } from '../shared/secret-values.js';
import {
  circuitBreakerAdapter,
  headersAdapter,
  OIDC_SECRET_FIELD,
  oauthAdapter,
  oauthSecretField,
  oidcAdapter,
  type RouteDesiredContext,
  routeSecretRequests,
  samlStatusOf,
  WEBHOOK_SECRET_FIELD,
  webhookVerificationAdapter,
} from './route-modules.js';

/** The adapters' own decisions; sync.test.ts round-trips every module through the server's code. */

function contextWith(values: Record<string, string> = {}): RouteDesiredContext {
  const secrets: SecretValues = { values: new Map(Object.entries(values)), versions: {} };
  return {
    resolved: { ipPolicyIds: undefined, certificateAuthorityIds: undefined },
    backendId: undefined,
    secrets,
  };
}

describe('route module adapters', () => {
  it('fill in the server defaults for omitted settings', () => {
    expect(circuitBreakerAdapter.desired({ enabled: true, numBuckets: 4 }, contextWith())).toEqual({
      enabled: true,
      tripped_duration: 10,
      rolling_window: 10,
      num_buckets: 4,
      volume_threshold: 20,
      error_threshold_percentage: 0.5,
    });
    expect(headersAdapter.desired({ enabled: false }, contextWith())).toEqual({
      enabled: false,
      add: {},
      remove: [],
    });
    expect(headersAdapter.desired(undefined, contextWith())).toBeUndefined();
  });

  it('names each Secret-valued field by its spec path', () => {
    const ref = (name: string) => ({ name, key: 'k' });
    expect(
      routeSecretRequests({
        webhookVerification: { enabled: true, provider: 'github', secretRef: ref('hook') },
        oauth: {
          enabled: true,
          provider: { gitlab: { clientId: 'app', clientSecretRef: ref('gl') } },
        },
        oidc: { enabled: true, issuer: 'https://id.example.com', clientId: 'c', clientSecretRef: ref('id') },
      }),
    ).toEqual([
      { field: WEBHOOK_SECRET_FIELD, ref: ref('hook') },
      { field: 'spec.oauth.provider.gitlab.clientSecretRef', ref: ref('gl') },
      { field: OIDC_SECRET_FIELD, ref: ref('id') },
    ]);
    // sns needs no secret; the managed OAuth app has none.
    expect(
      routeSecretRequests({
        webhookVerification: { enabled: true, provider: 'sns' },
        oauth: { enabled: true, provider: { google: { emailDomains: ['example.com'] } } },
      }),
    ).toEqual([]);
  });

  it('send the Secret value but compare a module by everything else (the server reads it back as null)', () => {
    const context = contextWith({ [WEBHOOK_SECRET_FIELD]: 'whsec-1' });
    const spec = { enabled: true, provider: 'stripe' as const, secretRef: { name: 'hook', key: 'k' } };
    const desired = webhookVerificationAdapter.desired(spec, context);
    expect(desired).toEqual({ enabled: true, provider: 'stripe', secret: 'whsec-1' });
    const read: WebhookVerificationModule = { enabled: true, provider: 'stripe', secret: null };
    expect(webhookVerificationAdapter.current(read, desired)).toEqual(desired);
    expect(webhookVerificationAdapter.current({ ...read, provider: 'github' }, desired)).not.toEqual(desired);
    expect(() => webhookVerificationAdapter.desired(spec, contextWith())).toThrow(/no Secret value/);
  });

  it('write the one OAuth provider set, and read back only the providers in use', () => {
    const field = oauthSecretField('github');
    const spec = {
      enabled: true,
      provider: {
        github: { clientId: 'app', clientSecretRef: { name: 'gh', key: 'k' }, organizations: ['acme'] },
      },
      cookiePrefix: 'acme.',
    };
    const desired = oauthAdapter.desired(spec, contextWith({ [field]: 'gh-secret' }));
    expect(desired).toEqual({
      enabled: true,
      options_passthrough: false,
      cookie_prefix: 'acme.',
      inactivity_timeout: 172_800,
      maximum_duration: 2_592_000,
      auth_check_interval: 3_600,
      provider: {
        github: {
          client_id: 'app',
          client_secret: 'gh-secret',
          scopes: [],
          email_addresses: [],
          email_domains: [],
          teams: [],
          organizations: ['acme'],
        },
      },
    });
    const member = {
      client_id: 'app',
      client_secret: null,
      scopes: [],
      email_addresses: [],
      email_domains: [],
      teams: [],
      organizations: ['acme'],
    };
    const read: OAuthModule = {
      enabled: true,
      options_passthrough: false,
      cookie_prefix: 'acme.',
      inactivity_timeout: 172_800,
      maximum_duration: 2_592_000,
      auth_check_interval: 3_600,
      provider: {
        github: member,
        facebook: null,
        microsoft: null,
        google: null,
        linkedin: null,
        gitlab: null,
        twitch: null,
        amazon: null,
      },
    };
    expect(oauthAdapter.current(read, desired)).toEqual(desired);
    // Another provider on the server is a difference, not hidden by the null members.
    const other = { ...read, provider: { ...read.provider, github: null, google: member } };
    expect(oauthAdapter.current(other, desired)).not.toEqual(desired);
  });

  it('requires the OIDC client secret (the server does too)', () => {
    const spec = {
      enabled: true,
      issuer: 'https://id.example.com',
      clientId: 'c',
      clientSecretRef: { name: 'id', key: 'k' },
    };
    expect(oidcAdapter.desired(spec, contextWith({ [OIDC_SECRET_FIELD]: 's3' }))).toMatchObject({
      client_id: 'c',
      client_secret: 's3',
      scopes: [],
      cookie_prefix: 'edgeward.',
    });
    expect(() => oidcAdapter.desired(spec, contextWith())).toThrow(/spec\.oidc\.clientSecretRef/);
  });

  it('puts the SAML service-provider fields into status form', () => {
    expect(samlStatusOf(null)).toBeUndefined();
    expect(
      samlStatusOf({
        enabled: true,
        options_passthrough: false,
        cookie_prefix: 'edgeward.',
        inactivity_timeout: 1,
        maximum_duration: 2,
        idp_metadata: '<EntityDescriptor/>',
        force_authn: false,
        allow_idp_initiated: false,
        authorized_groups: [],
        nameid_format: 'x',
        entity_id: 'https://a/saml/rt/metadata',
        assertion_consumer_service_url: 'https://a/saml/rt/acs',
        single_logout_url: 'https://a/saml/rt/slo',
        request_signing_certificate_pem: 'PEM',
        metadata_url: 'https://a/saml/rt/metadata',
        idp_metadata_url: '',
      }),
    ).toEqual({
      entityId: 'https://a/saml/rt/metadata',
      assertionConsumerServiceUrl: 'https://a/saml/rt/acs',
      singleLogoutUrl: 'https://a/saml/rt/slo',
      metadataUrl: 'https://a/saml/rt/metadata',
      requestSigningCertificatePem: 'PEM',
    });
  });
});
