import { z } from 'zod';
import { describedSpecFields } from '../common.js';
import { defineKind } from '../crd-definition.js';
import {
  backendModule,
  hostports,
  ipRestrictionModule,
  mutualTlsModule,
  policyModule,
  tlsTerminationModule,
} from '../modules.js';
import { edgeStatus, hostportsColumn } from './edge-status.js';

export const tlsEdgeSpec = z.object({
  ...describedSpecFields,
  hostports,
  backend: backendModule.optional(),
  ipRestriction: ipRestrictionModule.optional(),
  mutualTls: mutualTlsModule.optional(),
  tlsTermination: tlsTerminationModule.optional(),
  policy: policyModule.optional(),
});
export type TlsEdgeSpec = z.output<typeof tlsEdgeSpec>;

export const tlsEdgeStatus = edgeStatus;
export type TlsEdgeStatus = z.output<typeof tlsEdgeStatus>;

export const tlsEdgeKind = defineKind({
  kind: 'TLSEdge',
  plural: 'tlsedges',
  shortNames: ['edgtls'],
  description: 'TLSEdge is a public TLS entry point: hostports, and the modules applied to its traffic.',
  spec: tlsEdgeSpec,
  status: tlsEdgeStatus,
  printerColumns: [hostportsColumn],
});
