import type { EdgewardClient } from '../../../client/index.js';
import type { Manager, RegisteredController } from '../../runtime/manager.js';
import { RESERVED_ADDRESS } from '../kinds.js';
import { reconcileManaged } from '../managed-resource.js';
import { type ReservedAddressObject, reservedAddressSync } from './sync.js';

/** ReservedAddress -> `/reserved_addrs`. No references. */
export function registerReservedAddress(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<ReservedAddressObject> {
  const client = manager.resources<ReservedAddressObject>(RESERVED_ADDRESS);
  const informer = manager.informer<ReservedAddressObject>(RESERVED_ADDRESS);
  const controller = { manager, kind: RESERVED_ADDRESS, client, informer, sync: reservedAddressSync(api) };
  return manager.register<ReservedAddressObject>({
    kind: RESERVED_ADDRESS,
    reconcile: (request, context) => reconcileManaged(controller, request, context),
  });
}
