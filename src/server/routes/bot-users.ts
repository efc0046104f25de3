import type { FastifyInstance } from 'fastify';
import { type BotUser, botUser, botUserCreate, botUserList, botUserUpdate } from '../../schemas/bot-users.js';
import { newId } from '../crypto/ids.js';
import { inUse } from '../errors/api-error.js';
import { requireAdmin } from '../http/authorization.js';
import type { RequestContext } from '../http/context.js';
import { defineRoute } from '../http/route.js';
import type { Db } from '../store/database.js';
import {
  defineCollectionReads,
  defineUpdateRoute,
  deleteDependents,
  insertRow,
  type Row,
} from './collection.js';

const TAG = 'Bot users';
const KIND = 'bot user';

export function botUserToWire(row: Row<'bot_users'>, ctx: RequestContext): BotUser {
  return {
    id: row.id,
    uri: ctx.url(`/bot_users/${row.id}`),
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
  defineRoute(app, {
    method: 'POST',
    url: '/bot_users',
    operationId: 'createBotUser',
    summary: 'Create a bot user',
    tag: TAG,
    body: botUserCreate,
    status: 201,
    response: botUser,
    idempotent: true,
    event: { resource: 'bot_user', action: 'created' },
    handler: async ({ body, ctx }) => {
      requireAdmin(ctx, 'bot_users');
      const row = {
        id: newId('bot'),
        created_at: ctx.now(),
        name: body.name,
        active: body.active === false ? 0 : 1,
      };
      await insertRow(ctx.db, 'bot_users', row);
      return botUserToWire(row, ctx);
    },
  });
  defineUpdateRoute(app, {
    table: 'bot_users',
    eventResource: 'bot_user',
    path: '/bot_users',
    kind: KIND,
    name: 'BotUser',
    tag: TAG,
    summary: 'Rename a bot user or (de)activate it; an inactive bot cannot use its API keys',
    body: botUserUpdate,
    item: botUser,
    authorize: (ctx) => requireAdmin(ctx, 'bot_users'),
    toChanges: (body) => ({
      name: body.name,
      active: body.active === undefined ? undefined : body.active ? 1 : 0,
    }),
    toWire: botUserToWire,
  });
  defineCollectionReads(app, {
    table: 'bot_users',
    eventResource: 'bot_user',
    path: '/bot_users',
    listKey: 'bot_users',
    kind: KIND,
    name: 'BotUser',
    plural: 'BotUsers',
    tag: TAG,
    item: botUser,
    list: botUserList,
    toWire: botUserToWire,
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
      await deleteDependents(ctx.db, 'api_keys', 'owner_id', row.id, 'api_key');
    },
  });
}
