import type { FastifyInstance } from 'fastify';
import { type ApiKey, apiKey, apiKeyCreate, apiKeyList, apiKeyUpdate } from '../../schemas/api-keys.js';
import { idParams, listQuery } from '../../schemas/common.js';
import { hashToken, newSecretToken } from '../crypto/tokens.js';
import { inUse, notFound } from '../errors/api-error.js';
import type { RequestContext } from '../http/context.js';
import { listResponse } from '../http/list-response.js';
import { defineRoute } from '../http/route.js';
import { API_KEY_PREFIX } from '../store/bootstrap.js';
import { fetchPage } from '../store/paging.js';
import {
  deleteRow,
  describedToWire,
  findRow,
  insertRow,
  newDescribedRow,
  type Row,
  updateRow,
} from './collection.js';
import { resolveOwnerId } from './owner.js';

const TAG = 'API keys';
const KIND = 'API key';

/** `token` is the plain key: only the create response has it; the server keeps its hash alone. */
export function apiKeyToWire(row: Row<'api_keys'>, ctx: RequestContext, token: string | null = null): ApiKey {
  return {
    ...describedToWire(row, ctx, '/api_keys'),
    owner_id: row.owner_id,
    token,
  };
}

/**
 * A key the caller may see: admins see every key, anyone else only their own. Someone else's key
 * is a 404, the same as an unknown id, so its existence is not revealed.
 */
async function requireVisibleKey(ctx: RequestContext, id: string): Promise<Row<'api_keys'>> {
  const row = await findRow(ctx.db, 'api_keys', id);
  if (!row || (!ctx.principal.isAdmin && row.owner_id !== ctx.principal.id)) throw notFound(KIND, id);
  return row;
}

export async function apiKeyRoutes(app: FastifyInstance): Promise<void> {
  defineRoute(app, {
    method: 'POST',
    url: '/api_keys',
    operationId: 'createAPIKey',
    summary: 'Create an API key for the caller, or (admins only) for another user or bot',
    tag: TAG,
    body: apiKeyCreate,
    status: 201,
    response: apiKey,
    idempotent: true,
    event: { resource: 'api_key', action: 'created' },
    handler: async ({ body, ctx }) => {
      // Same owner rules as credentials: admins may name any user or bot, others only themselves.
      const ownerId = await resolveOwnerId(ctx, body.owner_id);
      const token = newSecretToken(API_KEY_PREFIX);
      const row = {
        ...newDescribedRow('ak', body, ctx),
        owner_id: ownerId,
        token_hash: hashToken(token),
      };
      await insertRow(ctx.db, 'api_keys', row);
      return apiKeyToWire(row, ctx, token);
    },
  });
  defineRoute(app, {
    method: 'GET',
    url: '/api_keys',
    operationId: 'listAPIKeys',
    summary: 'List API keys, newest first: all of them for admins, the caller’s own otherwise',
    tag: TAG,
    query: listQuery,
    status: 200,
    response: apiKeyList,
    handler: async ({ query, ctx }) => {
      let select = ctx.db.selectFrom('api_keys').selectAll();
      if (!ctx.principal.isAdmin) select = select.where('owner_id', '=', ctx.principal.id);
      const page = await fetchPage(select, 'id', { limit: query.limit, beforeId: query.before_id });
      return listResponse(ctx, 'api_keys', '/api_keys', query, page, (row) => apiKeyToWire(row, ctx));
    },
  });
  defineRoute(app, {
    method: 'GET',
    url: '/api_keys/:id',
    operationId: 'getAPIKey',
    summary: 'Get an API key (its token is never shown again)',
    tag: TAG,
    params: idParams,
    status: 200,
    response: apiKey,
    handler: async ({ params, ctx }) => apiKeyToWire(await requireVisibleKey(ctx, params.id), ctx),
  });
  defineRoute(app, {
    method: 'PATCH',
    url: '/api_keys/:id',
    operationId: 'updateAPIKey',
    summary: 'Update the description or metadata of an API key',
    tag: TAG,
    params: idParams,
    body: apiKeyUpdate,
    status: 200,
    response: apiKey,
    event: { resource: 'api_key', action: 'updated' },
    handler: async ({ params, body, ctx }) => {
      await requireVisibleKey(ctx, params.id);
      await updateRow(ctx.db, 'api_keys', params.id, body);
      return apiKeyToWire(await requireVisibleKey(ctx, params.id), ctx);
    },
  });
  defineRoute(app, {
    method: 'DELETE',
    url: '/api_keys/:id',
    operationId: 'deleteAPIKey',
    summary: 'Revoke an API key: later requests with it get 401',
    tag: TAG,
    params: idParams,
    status: 204,
    event: { resource: 'api_key', action: 'deleted' },
    handler: async ({ params, ctx }) => {
      const key = await requireVisibleKey(ctx, params.id);
      await refuseLastAdminKey(ctx, key.owner_id);
      await deleteRow(ctx.db, 'api_keys', params.id);
      return undefined;
    },
  });
}

/** Deleting the admin's last key would lock the account out until a restart with EDGEWARD_ADMIN_API_KEY. */
async function refuseLastAdminKey(ctx: RequestContext, ownerId: string): Promise<void> {
  if (!ownerId.startsWith('usr_')) return;
  const { count } = await ctx.db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('owner_id', '=', ownerId)
    .executeTakeFirstOrThrow();
  if (Number(count) <= 1) {
    throw inUse(`id: this is the last API key of user ${ownerId}; create another key before deleting it`);
  }
}
