import { z } from 'zod';
import { describedSpecFields } from '../common.js';
import { defineKind } from '../crd-definition.js';
import { hostports, mutualTlsModule, tlsTerminationAtEdgeModule } from '../modules.js';
import { edgeStatus, hostportsColumn } from './edge-status.js';

export const httpsEdgeSpec = z.object({
  ...describedSpecFields,
  hostports,
  mutualTls: mutualTlsModule.optional(),
  tlsTermination: tlsTerminationAtEdgeModule
    .optional()
    .meta({ description: 'HTTPS edges always terminate TLS at the edge; this sets the minimum version' }),
});
export type HttpsEdgeSpec = z.output<typeof httpsEdgeSpec>;

export const httpsEdgeStatus = edgeStatus.omit({ backendId: true });
export type HttpsEdgeStatus = z.output<typeof httpsEdgeStatus>;

export const httpsEdgeKind = defineKind({
  kind: 'HTTPSEdge',
  plural: 'httpsedges',
  shortNames: ['edghts'],
  description: 'HTTPSEdge is a public HTTPS entry point; HTTPSEdgeRoutes that name it route its requests.',
  spec: httpsEdgeSpec,
  status: httpsEdgeStatus,
  printerColumns: [hostportsColumn],
});
