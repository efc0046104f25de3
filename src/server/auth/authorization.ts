import { forbidden } from '../errors/api-error.js';
import type { Principal } from './principal.js';

/**
 * Account administration (creating, changing and deleting bot users) is for admins: a bot that could
 * deactivate or delete other bots could cut off every other automation of the account.
 */
export function requireAdmin(ctx: { principal: Principal }, action: string): void {
  if (!ctx.principal.isAdmin) throw forbidden(`${action}: only admins may do this`);
}
