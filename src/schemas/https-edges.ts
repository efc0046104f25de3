import { z } from 'zod';
import { describedInputFields, describedResourceFields, listOf, modulesInUpdate } from './common.js';
import {
  hostports,
  mutualTlsModule,
  mutualTlsModuleInput,
  tlsTerminationAtEdgeModuleInput,
  tlsTerminationModule,
} from './edge-modules.js';
import { httpsEdgeRoute } from './https-edge-routes.js';

export const httpsEdge = z
  .object({
    ...describedResourceFields,
    hostports: z.array(z.string()),
    mutual_tls: mutualTlsModule.nullable(),
    tls_termination: tlsTerminationModule.nullable(),
    routes: z.array(httpsEdgeRoute).meta({ description: 'every route of the edge, oldest first' }),
  })
  .meta({ id: 'HTTPSEdge' });
export type HttpsEdge = z.infer<typeof httpsEdge>;

/**
 * HTTPS edges always terminate TLS at the edge (routing needs the HTTP request): `terminate_at` is
 * `edge` or absent.
 */
const httpsEdgeModuleFields = {
  mutual_tls: mutualTlsModuleInput.nullable().optional(),
  tls_termination: tlsTerminationAtEdgeModuleInput.nullable().optional(),
};

export const httpsEdgeCreate = z.strictObject({
  ...describedInputFields,
  hostports: hostports.default([]),
  ...httpsEdgeModuleFields,
});
export type HttpsEdgeCreate = z.input<typeof httpsEdgeCreate>;

/** A module absent from an update is unchanged; a present one replaces the old; null is refused. */
export const httpsEdgeUpdate = z.strictObject({
  ...describedInputFields,
  hostports: hostports.optional(),
  ...modulesInUpdate(httpsEdgeModuleFields),
});
export type HttpsEdgeUpdate = z.input<typeof httpsEdgeUpdate>;
export const httpsEdgeList = listOf('https_edges', httpsEdge);
export type HttpsEdgeList = z.infer<typeof httpsEdgeList>;
