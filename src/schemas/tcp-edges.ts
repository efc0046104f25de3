import { z } from 'zod';
import { describedInputFields, describedResourceFields, listOf, modulesInUpdate } from './common.js';
import {
  backendModule,
  backendModuleInput,
  ipRestrictionModule,
  ipRestrictionModuleInput,
  policyModule,
  policyModuleInput,
} from './edge-modules.js';

/** TCP hostports are reserved addresses (`/reserved_addrs`), e.g. `eu.tcp.edgeward.dev:23456`. */
const tcpHostports = z.array(z.string().min(1).max(300)).max(100).meta({ uniqueItems: true });

export const tcpEdge = z
  .object({
    ...describedResourceFields,
    hostports: z.array(z.string()),
    backend: backendModule.nullable(),
    ip_restriction: ipRestrictionModule.nullable(),
    policy: policyModule.nullable(),
  })
  .meta({ id: 'TCPEdge' });
export type TcpEdge = z.infer<typeof tcpEdge>;

const tcpEdgeModuleFields = {
  backend: backendModuleInput.nullable().optional(),
  ip_restriction: ipRestrictionModuleInput.nullable().optional(),
  policy: policyModuleInput.nullable().optional(),
};

export const tcpEdgeCreate = z.strictObject({
  ...describedInputFields,
  hostports: tcpHostports.default([]),
  ...tcpEdgeModuleFields,
});
export type TcpEdgeCreate = z.input<typeof tcpEdgeCreate>;
export const tcpEdgeUpdate = z.strictObject({
  ...describedInputFields,
  hostports: tcpHostports.optional(),
  ...modulesInUpdate(tcpEdgeModuleFields),
});
export type TcpEdgeUpdate = z.input<typeof tcpEdgeUpdate>;
export const tcpEdgeList = listOf('tcp_edges', tcpEdge);
export type TcpEdgeList = z.infer<typeof tcpEdgeList>;
