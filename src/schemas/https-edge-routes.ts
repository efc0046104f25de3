import { z } from 'zod';
import { describedInputFields, listOf, modulesInUpdate, timestamp } from './common.js';
import { routeModuleInputFields, routeModuleReadFields } from './route-module-table.js';

export const routeMatchTypes = ['exact_path', 'path_prefix'] as const;

/** `exact_path` or `path_prefix`; a missing one says so rather than listing the values. */
const routeMatchType = z.enum(routeMatchTypes, {
  error: (issue) => (issue.input === undefined ? 'is required' : undefined),
});

export const MAX_ROUTE_MATCH_BYTES = 1024;

/**
 * The route selector: a path (`/api`), a host (`api.example.com`) or a host plus path
 * (`api.example.com/v1`). Checked only for what would make it unusable in a request line.
 */
export const routeMatch = z
  .string()
  .min(1, 'must not be empty')
  .refine(
    (s) => Buffer.byteLength(s, 'utf8') <= MAX_ROUTE_MATCH_BYTES,
    `must be at most ${MAX_ROUTE_MATCH_BYTES} bytes`,
  )
  .refine((s) => !/[\s\p{Cc}]/u.test(s), 'must not contain whitespace or control characters')
  .meta({
    description: "a path starting with '/', a host, or a host plus path",
    pattern: '^[^\\s\\x00-\\x1f\\x7f-\\x9f\\ufeff]+$',
  });

export const httpsEdgeRoute = z
  .object({
    edge_id: z.string(),
    id: z.string(),
    created_at: timestamp,
    uri: z.string(),
    description: z.string(),
    metadata: z.string(),
    match_type: z.enum(routeMatchTypes),
    match: z.string(),
    ...routeModuleReadFields(),
  })
  .meta({ id: 'HTTPSEdgeRoute' });
export type HttpsEdgeRoute = z.infer<typeof httpsEdgeRoute>;

const routeModuleFields = routeModuleInputFields();

export const httpsEdgeRouteCreate = z.strictObject({
  ...describedInputFields,
  match_type: routeMatchType,
  match: routeMatch,
  ...routeModuleFields,
});
export type HttpsEdgeRouteCreate = z.input<typeof httpsEdgeRouteCreate>;

/** As for edges: an absent module is unchanged, a present one replaces the old, null is refused. */
export const httpsEdgeRouteUpdate = z.strictObject({
  ...describedInputFields,
  match_type: routeMatchType.optional(),
  match: routeMatch.optional(),
  ...modulesInUpdate(routeModuleFields),
});
export type HttpsEdgeRouteUpdate = z.input<typeof httpsEdgeRouteUpdate>;

export const httpsEdgeRouteList = listOf('routes', httpsEdgeRoute);
export type HttpsEdgeRouteList = z.infer<typeof httpsEdgeRouteList>;

/** Path parameters of one route: `/edges/https/{edge_id}/routes/{id}`. */
export const httpsEdgeRouteParams = z.strictObject({ edge_id: z.string().min(1), id: z.string().min(1) });
export const httpsEdgeRoutesParams = z.strictObject({ edge_id: z.string().min(1) });
