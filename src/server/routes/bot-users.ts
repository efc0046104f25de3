import type { FastifyInstance } from 'fastify';
import { newId } from '../../crypto/ids.js';
import { type BotUser, botUser, botUserCreate, botUserList, botUserUpdate } from '../../schemas/bot-users.js';
import { requireAdmin } from '../auth/authorization.js';
import { inUse } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import type { Db } from '../store/database.js';
import { insertRow, type Row } from '../store/rows.js';
import { API_KEYS } from './api-keys.js';
import { defineCollection } from './collection.js';
import { defineCreateRoute } from './collection-create.js';
import { defineCollectionReads } from './collection-reads.js';
import { defineUpdateRoute } from './collection-update.js';
import { deleteDependents } from './delete-dependents.js';

const BOT_USERS = defineCollection({
  table: 'bot_users',
  path: '/bot_users',
  kind: 'bot user',
  name: 'BotUser',
  plural: 'BotUsers',
  tag: 'Bot users',
  eventResource: 'bot_user',
  listKey: 'bot_users',
  item: botUser,
  list: botUserList,
  toWire: botUserToWire,
});

export function botUserToWire(row: Row<'bot_users'>, ctx: RequestContext): BotUser {
  return {
    id: row.id,
    uri: ctx.url(`${BOT_USERS.path}/${row.id}`),
    name: row.name,
    active: row.active === 1,
    created_at: row.created_at,
  };
}

/** Tunnel and SSH credentials a bot owns: they would be orphaned by deleting it. */
async function countOwnedCredentials(db: Db, ownerId: string): Promise<number> {
  let total = 0;
  for (const table of ['credentials', 'ssh_credentials'] as const) {
    const { n } = await db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number | string | bigint>().as('n'))
      .where('owner_id', '=', ownerId)
      .executeTakeFirstOrThrow();
    // SQLite returns a number, PostgreSQL a bigint as a string.
    total += Number(n);
  }
  return total;
}

export async function botUserRoutes(app: FastifyInstance): Promise<void> {
  defineCreateRoute(app, BOT_USERS, {
    summary: 'Create a bot user',
    body: botUserCreate,
    handler: async ({ body, ctx }) => {
      requireAdmin(ctx, 'bot_users');
      const row = {
        id: newId(BOT_USERS.idPrefix),
        created_at: ctx.now(),
        name: body.name,
        active: body.active === false ? 0 : 1,
      };
      await insertRow(ctx.db, BOT_USERS.table, row);
      return botUserToWire(row, ctx);
    },
  });
  defineUpdateRoute(app, BOT_USERS, {
    summary: 'Rename a bot user or (de)activate it; an inactive bot cannot use its API keys',
    body: botUserUpdate,
    authorize: (ctx) => requireAdmin(ctx, 'bot_users'),
    toChanges: (body) => ({
      name: body.name,
      active: body.active === undefined ? undefined : body.active ? 1 : 0,
    }),
  });
  defineCollectionReads(app, BOT_USERS, {
    authorizeDelete: (ctx) => requireAdmin(ctx, 'bot_users'),
    // API keys exist only to act as the bot, so they go with it. Credentials authenticate agents
    // that may still be running; deleting them silently would cut those agents off, so refuse.
    beforeDelete: async (row, ctx) => {
      const owned = await countOwnedCredentials(ctx.db, row.id);
      if (owned > 0) {
        throw inUse(
          `bot user ${row.id} still owns ${owned} credential${owned === 1 ? '' : 's'}; delete them first`,
        );
      }
      await deleteDependents(ctx.db, API_KEYS.table, 'owner_id', row.id, 'api_key');
    },
  });
}
