import { isIdOf } from '../../schemas/id-prefixes.js';
import { badReference, forbidden } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';

/**
 * The owner of a new credential: the caller by default. Only admins may name someone else, and
 * whoever is named must be an existing user (`usr_`) or bot user (`bot_`). The permission check
 * comes first so a non-admin cannot probe which ids exist.
 */
export async function resolveOwnerId(ctx: RequestContext, ownerId: string | undefined): Promise<string> {
  if (ownerId === undefined) return ctx.principal.id;
  if (ownerId !== ctx.principal.id && !ctx.principal.isAdmin) {
    throw forbidden('owner_id: only admins may name an owner other than themselves');
  }
  if (!(await ownerExists(ctx, ownerId))) throw badReference('owner_id', ownerId, 'user or bot user');
  return ownerId;
}

async function ownerExists(ctx: RequestContext, id: string): Promise<boolean> {
  if (id.startsWith('usr_')) {
    return (
      (await ctx.db.selectFrom('users').select('id').where('id', '=', id).executeTakeFirst()) !== undefined
    );
  }
  if (isIdOf('/bot_users', id)) {
    return (
      (await ctx.db.selectFrom('bot_users').select('id').where('id', '=', id).executeTakeFirst()) !==
      undefined
    );
  }
  return false;
}
