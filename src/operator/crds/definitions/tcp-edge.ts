import { z } from 'zod';
import { describedSpecFields } from '../common.js';
import { defineKind } from '../crd-definition.js';
import { backendModule, ipRestrictionModule, policyModule } from '../modules.js';
import { edgeStatus, hostportsColumn } from './edge-status.js';

export const tcpEdgeSpec = z.object({
  ...describedSpecFields,
  hostports: z.array(z.string().min(1).max(300)).max(100).optional().meta({
    description:
      "reserved addresses served by the edge, e.g. 'eu.tcp.edgeward.dev:23456' (see ReservedAddress)",
    'x-kubernetes-list-type': 'set',
  }),
  backend: backendModule.optional(),
  ipRestriction: ipRestrictionModule.optional(),
  policy: policyModule.optional(),
});
export type TcpEdgeSpec = z.output<typeof tcpEdgeSpec>;

export const tcpEdgeStatus = edgeStatus;
export type TcpEdgeStatus = z.output<typeof tcpEdgeStatus>;

export const tcpEdgeKind = defineKind({
  kind: 'TCPEdge',
  plural: 'tcpedges',
  shortNames: ['edgtcp'],
  description:
    'TCPEdge is a public TCP entry point on reserved addresses, and the modules applied to its traffic.',
  spec: tcpEdgeSpec,
  status: tcpEdgeStatus,
  printerColumns: [hostportsColumn],
});
