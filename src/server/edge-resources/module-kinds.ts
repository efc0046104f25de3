import type { z } from 'zod';
import type { Ref } from '../../schemas/common.js';
import {
  backendModule,
  backendModuleInput,
  DEFAULT_MIN_TLS_VERSION,
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
import { compilePolicy, PolicyError, type PolicyPhase } from '../../traffic-policy/index.js';
import { ApiError, badReference, badRequest } from '../errors/api-error.js';
import { fieldPath } from '../errors/zod-issues.js';
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
  /**
   * 400 naming `<field>.<member>` when the value has the right shape but cannot work where it is
   * set (a policy's CEL, whose variables depend on whether `ownerTable` holds HTTPS routes or
   * TCP/TLS edges). Runs before `checkReferences`, without the database.
   */
  validate?(value: z.output<Input>, field: string, ownerTable: string): void;
  /**
   * 400 naming `<field>.<member>` when a referenced id does not exist. `previous` is the module the
   * owner has now (undefined when unset or the owner is new).
   */
  checkReferences?(
    value: z.output<Input>,
    ctx: RequestContext,
    field: string,
    previous: Stored | undefined,
  ): Promise<void>;
  /**
   * Slow work that needs no transaction (key generation), run before the write transaction opens;
   * the result reaches `toStored` as `owner.prepared`. `owner.previous` is the module as read then:
   * it may have changed by the time `toStored` runs, which must cope with that.
   */
  prepare?(value: z.output<Input>, owner: { id: string; previous: unknown }): Promise<unknown>;
  /**
   * What is stored when it is not the write form itself: secrets sealed, prepared keys kept.
   * Without it the validated write form is stored as is. Runs inside the write transaction, so it
   * must stay fast.
   */
  toStored?(value: z.output<Input>, ctx: RequestContext, owner: ModuleOwnerRef): Promise<Stored>;
  toWire(stored: Stored, ctx: RequestContext, scope: WireScope): z.input<Output>;
  /**
   * What the edge's feed carries: the write form with its secrets opened (`open(field, sealed)`
   * with the field they were sealed under). Without it the stored form is sent as it is.
   */
  toEdge?(stored: Stored, open: (field: string, sealed: string) => string): unknown;
}

/**
 * The row a module is stored on, the module's previous stored value (undefined when unset) and
 * what `prepare` produced for this request (undefined when the kind has no prepare step or it had
 * nothing to do).
 */
export interface ModuleOwnerRef {
  table: string;
  id: string;
  previous: unknown;
  prepared?: unknown;
}

/** Where a module is shown from: what read forms derive from the owner rather than the module. */
export interface WireScope {
  /**
   * Public origin (`https://host[:port]`) of the edge that serves the module's owner, when it has
   * a usable hostport; URLs the edge itself serves (SAML's SP endpoints) start with it.
   */
  edgeOrigin?: string;
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

/**
 * Every id must exist and appear once; the message names the list element. Ids in `kept` (those
 * the owner references already) are not looked up: they may name a row deleted since.
 */
async function requireExisting(
  ctx: RequestContext,
  table: ReferencedTable,
  ids: string[],
  field: string,
  kind: string,
  kept: ReadonlySet<string> = new Set(),
): Promise<void> {
  const seen = new Map<string, number>();
  ids.forEach((id, index) => {
    const first = seen.get(id);
    if (first !== undefined)
      throw badRequest(`${field}[${index}]: '${id}' is listed twice (first at index ${first})`);
    seen.set(id, index);
  });
  const lookedUp = ids.filter((id) => !kept.has(id));
  if (lookedUp.length === 0) return;
  const found = new Set(
    (await ctx.db.selectFrom(table).select('id').where('id', 'in', lookedUp).execute()).map((row) => row.id),
  );
  ids.forEach((id, index) => {
    if (!kept.has(id) && !found.has(id)) throw badReference(`${field}[${index}]`, id, kind);
  });
}

/** `backend.backend_id` inside an edge body, plain `backend_id` in a module's own PUT body. */
export const member = (field: string, name: string): string => (field ? `${field}.${name}` : name);

const refsOf = (ctx: RequestContext, collection: string, ids: string[]): Ref[] =>
  ids.map((id) => ({ id, uri: ctx.url(`${collection}/${id}`) }));

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
 * zero rules. So only new references are checked: ids the owner's module lists already are kept
 * even when their policy is gone, or re-sending the module as read (GET, then PUT) would fail.
 * Only IP policies can dangle: backends and CAs cannot be deleted while referenced (409).
 */
export const ipRestrictionKind = defineModuleKind({
  name: 'ip_restriction',
  operationName: 'IPRestriction',
  input: ipRestrictionModuleInput,
  output: ipRestrictionModule,
  checkReferences: (value, ctx, field, previous) =>
    requireExisting(
      ctx,
      'ip_policies',
      value.ip_policy_ids,
      member(field, 'ip_policy_ids'),
      'IP policy',
      new Set(previous?.ip_policy_ids ?? []),
    ),
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

/** HTTPS routes run their policy per request; TCP and TLS edges per connection (conn.* and deny only). */
const POLICY_PHASES: Record<string, PolicyPhase> = {
  https_edge_routes: 'http',
  tcp_edges: 'connection',
  tls_edges: 'connection',
};

/** The edge compiles the same way, so a policy the API stored is one the edge can run. */
export const policyKind = defineModuleKind({
  name: 'policy',
  operationName: 'Policy',
  input: policyModuleInput,
  output: policyModule,
  validate(value, field, ownerTable) {
    const phase = POLICY_PHASES[ownerTable];
    if (!phase) throw new Error(`policy module: no policy phase is defined for ${ownerTable}`);
    try {
      compilePolicy(value, { phase });
    } catch (error) {
      if (!(error instanceof PolicyError)) throw error;
      throw new ApiError('ERR_EDGEWARD_100', `${fieldPath(error.path, field)}: ${error.reason}`, {
        cause: error,
      });
    }
  },
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
