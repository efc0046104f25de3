import { z } from 'zod';
import { describedInputFields, describedResourceFields, listOf, ref } from './common.js';

export const reservedAddrRegions = ['au', 'eu', 'ap', 'us', 'jp', 'in', 'sa'] as const;
export const reservedAddrRegion = z
  .enum(reservedAddrRegions)
  .meta({ description: 'datacenter region of the address; default us' });
export type ReservedAddrRegion = z.infer<typeof reservedAddrRegion>;

export const reservedAddr = z
  .object({
    ...describedResourceFields,
    addr: z.string().meta({ description: '`hostname:port` assigned at creation' }),
    region: reservedAddrRegion,
    // Endpoint configurations are not built, so nothing can be attached: always null today.
    endpoint_configuration: ref.nullable(),
  })
  .meta({ id: 'ReservedAddr' });
export type ReservedAddr = z.infer<typeof reservedAddr>;

export const reservedAddrCreate = z.strictObject({
  ...describedInputFields,
  region: reservedAddrRegion.optional(),
});
export type ReservedAddrCreate = z.input<typeof reservedAddrCreate>;
export const reservedAddrUpdate = z.strictObject({
  ...describedInputFields,
  endpoint_configuration_id: z
    .string()
    .nullable()
    .optional()
    .meta({ description: 'endpoint configuration to attach; null or "" detaches' }),
});
export type ReservedAddrUpdate = z.input<typeof reservedAddrUpdate>;
export const reservedAddrList = listOf('reserved_addrs', reservedAddr);
export type ReservedAddrList = z.infer<typeof reservedAddrList>;
