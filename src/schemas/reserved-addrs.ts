import { z } from 'zod';
import { description, listOf, metadata, ref, timestamp } from './common.js';

export const reservedAddrRegions = ['au', 'eu', 'ap', 'us', 'jp', 'in', 'sa'] as const;
export const reservedAddrRegion = z
  .enum(reservedAddrRegions)
  .meta({ description: 'datacenter region of the address; default us' });
export type ReservedAddrRegion = z.infer<typeof reservedAddrRegion>;

export const reservedAddr = z
  .object({
    id: z.string(),
    uri: z.string(),
    created_at: timestamp,
    description: z.string(),
    metadata: z.string(),
    addr: z.string().meta({ description: '`hostname:port` assigned at creation' }),
    region: reservedAddrRegion,
    // Endpoint configurations are not built, so nothing can be attached: always null today.
    endpoint_configuration: ref.nullable(),
  })
  .meta({ id: 'ReservedAddr' });
export type ReservedAddr = z.infer<typeof reservedAddr>;

export const reservedAddrCreate = z.strictObject({
  description: description.optional(),
  metadata: metadata.optional(),
  region: reservedAddrRegion.optional(),
});
export type ReservedAddrCreate = z.input<typeof reservedAddrCreate>;
export const reservedAddrUpdate = z.strictObject({
  description: description.optional(),
  metadata: metadata.optional(),
  endpoint_configuration_id: z
    .string()
    .nullable()
    .optional()
    .meta({ description: 'endpoint configuration to attach; null or "" detaches' }),
});
export type ReservedAddrUpdate = z.input<typeof reservedAddrUpdate>;
export const reservedAddrList = listOf('reserved_addrs', reservedAddr);
export type ReservedAddrList = z.infer<typeof reservedAddrList>;
