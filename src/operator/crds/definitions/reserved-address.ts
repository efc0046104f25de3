import { z } from 'zod';
import { reservedAddrRegions } from '../../../schemas/reserved-addrs.js';
import { immutable, withRules } from '../cel.js';
import { describedSpecFields, statusFields } from '../common.js';
import { defineKind } from '../crd-definition.js';

export const reservedAddressSpec = withRules(
  z.object({
    ...describedSpecFields,
    region: z
      .enum(reservedAddrRegions)
      .default('us')
      .meta({ description: 'datacenter region of the address; default us; immutable' }),
  }),
  immutable('region', 'an address is assigned in its region'),
);
export type ReservedAddressSpec = z.output<typeof reservedAddressSpec>;

export const reservedAddressStatus = z.object({
  ...statusFields,
  addr: z.string().optional().meta({ description: 'the hostname:port assigned by the server' }),
  region: z.string().optional(),
});
export type ReservedAddressStatus = z.output<typeof reservedAddressStatus>;

export const reservedAddressKind = defineKind({
  kind: 'ReservedAddress',
  plural: 'reservedaddresses',
  shortNames: ['ra'],
  description: 'ReservedAddress is a hostname:port reserved in a region, for TCP edges.',
  spec: reservedAddressSpec,
  status: reservedAddressStatus,
  printerColumns: [
    { name: 'Addr', type: 'string', jsonPath: '.status.addr' },
    { name: 'Region', type: 'string', jsonPath: '.spec.region' },
  ],
});
