import { z } from 'zod';
import { ifThen, ref } from './common.js';

/**
 * Modules shared by TLS, HTTPS and TCP edges and HTTPS routes: backend, ip_restriction,
 * mutual_tls, tls_termination and policy. Each has a write form (what PUT and the edge bodies
 * take: ids) and a read form (what responses show: Refs). Every module has `enabled`, default true.
 */

const enabled = z.boolean().default(true).meta({ description: 'true applies the module; default true' });
const readEnabled = z.boolean();

/** `enabled` of every module, for the route-only modules in `route-modules.ts`. */
export { enabled as moduleEnabledInput, readEnabled as moduleEnabled };

export const backendModuleInput = z.strictObject({
  enabled,
  backend_id: z.string().min(1).meta({ description: 'id of a tunnel-group backend (bkdtg_...)' }),
});
export const backendModule = z.object({ enabled: readEnabled, backend: ref }).meta({ id: 'EndpointBackend' });

export const ipRestrictionModuleInput = z.strictObject({
  enabled,
  // Each id once (the server says which is listed twice); declared so clients and fuzzers know.
  ip_policy_ids: z
    .array(z.string().min(1))
    .min(1, 'must list at least one IP policy')
    .max(100)
    .meta({ uniqueItems: true }),
});
export const ipRestrictionModule = z
  .object({ enabled: readEnabled, ip_policies: z.array(ref) })
  .meta({ id: 'EndpointIPPolicy' });

export const mutualTlsModuleInput = z.strictObject({
  enabled,
  certificate_authority_ids: z
    .array(z.string().min(1))
    .min(1, 'must list at least one certificate authority')
    .max(100)
    .meta({ uniqueItems: true }),
});
export const mutualTlsModule = z
  .object({ enabled: readEnabled, certificate_authorities: z.array(ref) })
  .meta({ id: 'EndpointMutualTLS' });

export const tlsMinVersions = ['1.0', '1.1', '1.2', '1.3'] as const;
/** What the service applies when min_version is left unset and TLS ends at the edge. */
export const DEFAULT_MIN_TLS_VERSION = '1.2';
const minVersion = z.enum(tlsMinVersions).nullable().optional().meta({
  description:
    'minimum TLS version; the service picks a safe default (1.2) when unset; null when terminating upstream',
});

/** TLS edges may pass TLS through to the agent (`upstream`), in which case there is no minimum version. */
export const tlsTerminationModuleInput = z
  .strictObject({
    enabled,
    terminate_at: z.enum(['edge', 'upstream']).default('edge'),
    min_version: minVersion,
  })
  .superRefine((value, ctx) => {
    if (value.terminate_at === 'upstream' && value.min_version !== undefined && value.min_version !== null) {
      ctx.addIssue({
        code: 'custom',
        path: ['min_version'],
        message: "must be null when terminate_at is 'upstream'",
      });
    }
  })
  .meta(
    ifThen(
      { properties: { terminate_at: { const: 'upstream' } }, required: ['terminate_at'] },
      { properties: { min_version: { type: 'null' } } },
    ),
  );

/**
 * HTTPS edges always terminate at the edge (routing needs the HTTP request), so only the version is
 * set; `terminate_at` is accepted as `edge` alone so the read form can be sent back as it is.
 */
export const tlsTerminationAtEdgeModuleInput = z.strictObject({
  enabled,
  terminate_at: z
    .literal('edge', { error: 'HTTPS edges always terminate TLS at the edge' })
    .optional()
    .meta({ description: "'edge' only (the default): HTTPS edges always terminate TLS at the edge" }),
  min_version: minVersion,
});

export const tlsTerminationModule = z
  .object({
    enabled: readEnabled,
    terminate_at: z.enum(['edge', 'upstream']),
    min_version: z.string().nullable(),
  })
  .meta({ id: 'EndpointTLSTermination' });

const ruleName = z.string().min(1).max(255);
export const policyActionInput = z.strictObject({
  type: z
    .string()
    .regex(
      /^[a-z][a-z0-9-]*$/,
      "must be an action type such as 'deny', 'log', 'url-rewrite' or 'custom-response'",
    ),
  config: z.record(z.string(), z.unknown()).nullable().optional(),
});
export const policyRuleInput = z.strictObject({
  name: ruleName,
  expressions: z.array(z.string().min(1).max(4096)).max(100).default([]),
  actions: z.array(policyActionInput).min(1, 'a rule needs at least one action').max(100),
});
export const policyModuleInput = z.strictObject({
  enabled,
  inbound: z.array(policyRuleInput).max(1000).default([]),
  outbound: z.array(policyRuleInput).max(1000).nullable().optional(),
});

const policyAction = z
  .object({ type: z.string(), config: z.record(z.string(), z.unknown()).nullable() })
  .meta({ id: 'EndpointAction' });
const policyRule = z
  .object({ name: z.string(), expressions: z.array(z.string()), actions: z.array(policyAction) })
  .meta({ id: 'EndpointRule' });
export const policyModule = z
  .object({ enabled: readEnabled, inbound: z.array(policyRule), outbound: z.array(policyRule).nullable() })
  .meta({ id: 'EndpointPolicy' });

export type BackendModuleInput = z.output<typeof backendModuleInput>;
export type IpRestrictionModuleInput = z.output<typeof ipRestrictionModuleInput>;
export type MutualTlsModuleInput = z.output<typeof mutualTlsModuleInput>;
export type TlsTerminationModuleInput = z.output<typeof tlsTerminationModuleInput>;
export type TlsTerminationAtEdgeModuleInput = z.output<typeof tlsTerminationAtEdgeModuleInput>;
export type PolicyModuleInput = z.output<typeof policyModuleInput>;
export type BackendModule = z.infer<typeof backendModule>;
export type IpRestrictionModule = z.infer<typeof ipRestrictionModule>;
export type MutualTlsModule = z.infer<typeof mutualTlsModule>;
export type TlsTerminationModule = z.infer<typeof tlsTerminationModule>;
export type PolicyModule = z.infer<typeof policyModule>;

/** `host:port` served by an edge. */
export const hostport = z
  .string()
  .regex(
    /^(?=.{1,253}:)(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?:([1-9]\d{0,4})$/,
    "must be '<lowercase host>:<port>', e.g. 'app.example.com:443'",
  )
  .refine((value) => Number(value.split(':').pop()) <= 65535, 'port must be 1..65535');
export const hostports = z.array(hostport).max(100).meta({ uniqueItems: true });
