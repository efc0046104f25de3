import type { EdgewardClient } from '../../../client/index.js';
import type { RegisteredController } from '../../runtime/controller.js';
import type { Manager } from '../../runtime/manager.js';
import { registerManaged } from '../managed/register-managed.js';
import { RESERVED_ADDRESS } from '../resource-types.js';
import { type ReservedAddressObject, reservedAddressSync } from './sync.js';

/** ReservedAddress -> `/reserved_addrs`. No references. */
export function registerReservedAddress(
  manager: Manager,
  api: EdgewardClient,
): RegisteredController<ReservedAddressObject> {
  return registerManaged(manager, RESERVED_ADDRESS, reservedAddressSync(api));
}
