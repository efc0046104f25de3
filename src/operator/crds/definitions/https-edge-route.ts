import { z } from 'zod';
import { MAX_ROUTE_MATCH_BYTES, routeMatchTypes } from '../../../schemas/https-edge-routes.js';
import { exactlyOne, immutable, withRules } from '../cel.js';
import {
  describedSpecFields,
  localRef,
  secretVersionsStatusField,
  serverId,
  statusFields,
} from '../common.js';
import { defineKind } from '../crd-definition.js';
import { routeModuleSpecFields } from '../route-module-fields.js';

const ROUTES_BELONG_TO_ONE_EDGE = 'a route belongs to one edge for its life';

export const httpsEdgeRouteSpec = withRules(
  z.object({
    ...describedSpecFields,
    edgeRef: localRef('HTTPSEdge')
      .optional()
      .meta({ description: 'the HTTPSEdge in the same namespace; immutable' }),
    edgeId: serverId('edghts', 'the HTTPS edge').optional(),
    matchType: z.enum(routeMatchTypes).meta({ description: 'exact_path or path_prefix' }),
    match: z
      .string()
      .min(1)
      .max(MAX_ROUTE_MATCH_BYTES)
      .regex(/^\S+$/)
      .meta({ description: "the route selector: a path starting with '/', a host, or a host plus path" }),
    ...routeModuleSpecFields(),
  }),
  exactlyOne('edgeRef', 'edgeId'),
  immutable('edgeRef', ROUTES_BELONG_TO_ONE_EDGE),
  immutable('edgeId', ROUTES_BELONG_TO_ONE_EDGE),
);
export type HttpsEdgeRouteSpec = z.output<typeof httpsEdgeRouteSpec>;

export const httpsEdgeRouteStatus = z.object({
  ...statusFields,
  ...secretVersionsStatusField,
  edgeId: z.string().optional().meta({ description: 'id of the HTTPS edge the route belongs to' }),
  backendId: z
    .string()
    .optional()
    .meta({ description: 'id of the tunnel-group backend the operator keeps for backend.labels' }),
  saml: z
    .object({
      entityId: z.string().optional().meta({ description: 'the service provider entity id' }),
      assertionConsumerServiceUrl: z.string().optional(),
      singleLogoutUrl: z.string().optional(),
      metadataUrl: z.string().optional(),
      requestSigningCertificatePem: z
        .string()
        .optional()
        .meta({ description: 'certificate of the key that signs SAML requests' }),
    })
    .optional()
    .meta({ description: 'what the identity provider needs to know about the route, when saml is set' }),
});
export type HttpsEdgeRouteStatus = z.output<typeof httpsEdgeRouteStatus>;

export const httpsEdgeRouteKind = defineKind({
  kind: 'HTTPSEdgeRoute',
  plural: 'httpsedgeroutes',
  shortNames: ['edghtsrt'],
  description:
    'HTTPSEdgeRoute routes the requests of an HTTPSEdge that match a path or host, with its modules.',
  spec: httpsEdgeRouteSpec,
  status: httpsEdgeRouteStatus,
  printerColumns: [
    { name: 'Match Type', type: 'string', jsonPath: '.spec.matchType' },
    { name: 'Match', type: 'string', jsonPath: '.spec.match' },
  ],
});
