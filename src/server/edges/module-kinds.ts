import type { z } from 'zod';
import type { Ref } from '../../schemas/common.js';
import {
  backendModule,
  backendModuleInput,
  ipRestrictionModule,
  ipRestrictionModuleInput,
  mutualTlsModule,
  mutualTlsModuleInput,
  policyModule,
  policyModuleInput,
  tlsTerminationAtEdgeModuleInput,
  tlsTerminationModule,
  tlsTerminationModuleInput,
} from '../../schemas/edge-modules.js';
import { badReference, badRequest } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import type { Database } from '../store/tables.js';

/**
 * One kind of edge or route module: how it is written (ids), checked (the ids exist), stored (the
 * validated write form, defaults applied) and shown (Refs). Edges, routes and the module
 * sub-resources all go through these, so a module behaves the same wherever it is set.
 */
export interface ModuleKind<
  Input extends z.ZodType = z.ZodType,
  Output extends z.ZodType = z.ZodType,
  Stored = z.output<Input>,
> {
  /** Field and path name, e.g. `ip_restriction`. */
  name: string;
  /** PascalCase for operation ids, e.g. `IPRestriction`. */
  operationName: string;
  input: Input;
  output: Output;
  /** 400 naming `<field>.<member>` when a referenced id does not exist. */
  checkReferences?(value: z.output<Input>, ctx: RequestContext, field: string): Promise<void>;
  /**
   * What is stored when it is not the write form itself: secrets sealed, keys generated. Without
   * it the validated write form is stored as is.
   */
  toStored?(value: z.output<Input>, ctx: RequestContext, owner: ModuleOwnerRef): Promise<Stored>;
  toWire(stored: Stored, ctx: RequestContext): z.input<Output>;
}

/** The row a module is stored on, and the module's previous stored value (undefined when unset). */
export interface ModuleOwnerRef {
  table: string;
  id: string;
  previous: unknown;
}

export function defineModuleKind<Input extends z.ZodType, Output extends z.ZodType, Stored = z.output<Input>>(
  kind: ModuleKind<Input, Output, Stored>,
): ModuleKind {
  return kind as unknown as ModuleKind;
}

/** The stored form of `value`: `toStored` when the kind has one, else the write form itself. */
export async function storedModule(
  kind: ModuleKind,
  value: unknown,
  ctx: RequestContext,
  owner: ModuleOwnerRef,
): Promise<unknown> {
  return kind.toStored ? kind.toStored(value, ctx, owner) : value;
}

type ReferencedTable = keyof Pick<
  Database,
  'tunnel_group_backends' | 'ip_policies' | 'certificate_authorities'
>;

/** Every id must exist and appear once; the message names the list element. */
async function requireExisting(
  ctx: RequestContext,
  table: ReferencedTable,
  ids: string[],
  field: string,
  kind: string,
): Promise<void> {
  const seen = new Map<string, number>();
  ids.forEach((id, index) => {
    const first = seen.get(id);
    if (first !== undefined)
      throw badRequest(`${field}[${index}]: '${id}' is listed twice (first at index ${first})`);
    seen.set(id, index);
  });
  if (ids.length === 0) return;
  const found = new Set(
    (await ctx.db.selectFrom(table).select('id').where('id', 'in', ids).execute()).map((row) => row.id),
  );
  ids.forEach((id, index) => {
    if (!found.has(id)) throw badReference(`${field}[${index}]`, id, kind);
  });
}

/** `backend.backend_id` inside an edge body, plain `backend_id` in a module's own PUT body. */
export const member = (field: string, name: string): string => (field ? `${field}.${name}` : name);

const refsOf = (ctx: RequestContext, collection: string, ids: string[]): Ref[] =>
  ids.map((id) => ({ id, uri: ctx.url(`${collection}/${id}`) }));

/** What the service applies when min_version is left unset and TLS ends at the edge. */
export const DEFAULT_MIN_TLS_VERSION = '1.2';

export const backendKind = defineModuleKind({
  name: 'backend',
  operationName: 'Backend',
  input: backendModuleInput,
  output: backendModule,
  async checkReferences(value, ctx, field) {
    const found = await ctx.db
      .selectFrom('tunnel_group_backends')
      .select('id')
      .where('id', '=', value.backend_id)
      .executeTakeFirst();
    if (!found) throw badReference(member(field, 'backend_id'), value.backend_id, 'tunnel-group backend');
  },
  toWire: (stored, ctx) => ({
    enabled: stored.enabled,
    backend: { id: stored.backend_id, uri: ctx.url(`/backends/tunnel_group/${stored.backend_id}`) },
  }),
});

/**
 * Rule 1 of the spec: a policy deleted later stays referenced here and behaves as a policy with
 * zero rules, so only creation-time references are checked.
 */
export const ipRestrictionKind = defineModuleKind({
  name: 'ip_restriction',
  operationName: 'IPRestriction',
  input: ipRestrictionModuleInput,
  output: ipRestrictionModule,
  checkReferences: (value, ctx, field) =>
    requireExisting(ctx, 'ip_policies', value.ip_policy_ids, member(field, 'ip_policy_ids'), 'IP policy'),
  toWire: (stored, ctx) => ({
    enabled: stored.enabled,
    ip_policies: refsOf(ctx, '/ip_policies', stored.ip_policy_ids),
  }),
});

export const mutualTlsKind = defineModuleKind({
  name: 'mutual_tls',
  operationName: 'MutualTLS',
  input: mutualTlsModuleInput,
  output: mutualTlsModule,
  checkReferences: (value, ctx, field) =>
    requireExisting(
      ctx,
      'certificate_authorities',
      value.certificate_authority_ids,
      member(field, 'certificate_authority_ids'),
      'certificate authority',
    ),
  toWire: (stored, ctx) => ({
    enabled: stored.enabled,
    certificate_authorities: refsOf(ctx, '/certificate_authorities', stored.certificate_authority_ids),
  }),
});

export const tlsTerminationKind = defineModuleKind({
  name: 'tls_termination',
  operationName: 'TLSTermination',
  input: tlsTerminationModuleInput,
  output: tlsTerminationModule,
  toWire: (stored) => ({
    enabled: stored.enabled,
    terminate_at: stored.terminate_at,
    min_version: stored.terminate_at === 'upstream' ? null : (stored.min_version ?? DEFAULT_MIN_TLS_VERSION),
  }),
});

/** HTTPS edges: the same read form, written without `terminate_at` (always `edge`). */
export const tlsTerminationAtEdgeKind = defineModuleKind({
  name: 'tls_termination',
  operationName: 'TLSTermination',
  input: tlsTerminationAtEdgeModuleInput,
  output: tlsTerminationModule,
  toWire: (stored) => ({
    enabled: stored.enabled,
    terminate_at: 'edge' as const,
    min_version: stored.min_version ?? DEFAULT_MIN_TLS_VERSION,
  }),
});

export const policyKind = defineModuleKind({
  name: 'policy',
  operationName: 'Policy',
  input: policyModuleInput,
  output: policyModule,
  toWire: (stored) => {
    const rules = (list: typeof stored.inbound) =>
      list.map((rule) => ({
        name: rule.name,
        expressions: rule.expressions,
        actions: rule.actions.map((action) => ({ type: action.type, config: action.config ?? null })),
      }));
    return {
      enabled: stored.enabled,
      inbound: rules(stored.inbound),
      outbound: stored.outbound ? rules(stored.outbound) : null,
    };
  },
});
