import type { EdgewardClient } from '../../../client/index.js';
import type { ReservedAddr } from '../../../schemas/reserved-addrs.js';
import type { ReservedAddressSpec, ReservedAddressStatus } from '../../crds/definitions/reserved-address.js';
import type { ManagedObject, ResourceSync } from '../managed/managed-resource.js';
import { TerminalSyncError } from '../managed/sync-errors.js';
import { changedFields } from '../shared/changed-fields.js';
import { describedFields } from '../shared/described-fields.js';

export type ReservedAddressObject = ManagedObject & {
  spec: ReservedAddressSpec;
  status?: ReservedAddressStatus;
};

/** An unset description or metadata clears the server's (the spec is the whole truth). */
function desiredFields(object: ReservedAddressObject) {
  return describedFields(object.spec);
}

export function reservedAddressSync(
  api: EdgewardClient,
): ResourceSync<ReservedAddressObject, undefined, ReservedAddr> {
  return {
    resolve: async () => ({ ready: true, value: undefined }),
    get: (id) => api.reservedAddrs.get(id),
    create: (object, _resolved, options) =>
      api.reservedAddrs.create({ ...desiredFields(object), region: object.spec.region ?? 'us' }, options),
    async update(object, _resolved, remote) {
      // The region cannot change (CEL keeps it fixed on the object), but an adopted address may
      // be in another region than the spec says: that needs a new address, not an update.
      const region = object.spec.region ?? 'us';
      if (remote.region !== region) {
        throw new TerminalSyncError(
          'InvalidSpec',
          `spec.region: ${remote.id} is in region ${remote.region}, not ${region}; the region is immutable`,
        );
      }
      const patch = changedFields(desiredFields(object), remote);
      if (Object.keys(patch).length === 0) return { remote, changed: false };
      return { remote: await api.reservedAddrs.update(remote.id, patch), changed: true };
    },
    delete: (id) => api.reservedAddrs.delete(id),
    statusFields: (_object, remote) => ({ addr: remote.addr, region: remote.region }),
  };
}
