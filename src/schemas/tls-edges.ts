import { z } from 'zod';
import { describedInputFields, describedResourceFields, listOf, modulesInUpdate } from './common.js';
import {
  backendModule,
  backendModuleInput,
  hostports,
  ipRestrictionModule,
  ipRestrictionModuleInput,
  mutualTlsModule,
  mutualTlsModuleInput,
  policyModule,
  policyModuleInput,
  tlsTerminationModule,
  tlsTerminationModuleInput,
} from './edge-modules.js';

export const tlsEdge = z
  .object({
    ...describedResourceFields,
    hostports: z.array(z.string()),
    backend: backendModule.nullable(),
    ip_restriction: ipRestrictionModule.nullable(),
    mutual_tls: mutualTlsModule.nullable(),
    tls_termination: tlsTerminationModule.nullable(),
    policy: policyModule.nullable(),
  })
  .meta({ id: 'TLSEdge' });
export type TlsEdge = z.infer<typeof tlsEdge>;

const tlsEdgeModuleFields = {
  backend: backendModuleInput.nullable().optional(),
  ip_restriction: ipRestrictionModuleInput.nullable().optional(),
  mutual_tls: mutualTlsModuleInput.nullable().optional(),
  tls_termination: tlsTerminationModuleInput.nullable().optional(),
  policy: policyModuleInput.nullable().optional(),
};

export const tlsEdgeCreate = z.strictObject({
  ...describedInputFields,
  hostports: hostports.default([]),
  ...tlsEdgeModuleFields,
});
export type TlsEdgeCreate = z.input<typeof tlsEdgeCreate>;

/** A module absent from an update is unchanged; a present one replaces the old; null is refused. */
export const tlsEdgeUpdate = z.strictObject({
  ...describedInputFields,
  hostports: hostports.optional(),
  ...modulesInUpdate(tlsEdgeModuleFields),
});
export type TlsEdgeUpdate = z.input<typeof tlsEdgeUpdate>;
export const tlsEdgeList = listOf('tls_edges', tlsEdge);
export type TlsEdgeList = z.infer<typeof tlsEdgeList>;
