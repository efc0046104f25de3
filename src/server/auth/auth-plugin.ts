import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { hashToken } from '../../crypto/tokens.js';
import { isIdOf } from '../../schemas/id-prefixes.js';
import { ApiError } from '../errors/api-error.js';
import type { Db } from '../store/database.js';
import type { Principal } from './principal.js';
import type { PrincipalCache } from './principal-cache.js';

export const SUPPORTED_VERSIONS = ['2'];

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | undefined;
  }
  interface FastifyContextConfig {
    /** Probes and the OpenAPI document need neither a key nor a version header. */
    public?: boolean;
  }
}

/** Resolves the hash of a `Authorization: Bearer <key>` token to the owning user or bot. */
export async function authenticate(db: Db, tokenHash: string): Promise<Principal> {
  const key = await db
    .selectFrom('api_keys')
    .select(['id', 'owner_id'])
    .where('token_hash', '=', tokenHash)
    .executeTakeFirst();
  if (!key) throw new ApiError('ERR_EDGEWARD_201', 'Authorization: the API key is unknown or was revoked');
  if (isIdOf('/bot_users', key.owner_id)) {
    const bot = await db
      .selectFrom('bot_users')
      .select(['active'])
      .where('id', '=', key.owner_id)
      .executeTakeFirst();
    if (!bot)
      throw new ApiError('ERR_EDGEWARD_201', 'Authorization: the API key belongs to a deleted bot user');
    if (!bot.active)
      throw new ApiError('ERR_EDGEWARD_301', `Authorization: bot user ${key.owner_id} is inactive`);
    return { kind: 'bot', id: key.owner_id, isAdmin: false, apiKeyId: key.id };
  }
  const user = await db
    .selectFrom('users')
    .select(['is_admin'])
    .where('id', '=', key.owner_id)
    .executeTakeFirst();
  if (!user) throw new ApiError('ERR_EDGEWARD_201', 'Authorization: the API key belongs to a deleted user');
  return { kind: 'user', id: key.owner_id, isAdmin: user.is_admin === 1, apiKeyId: key.id };
}

function bearerToken(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (!header) throw new ApiError('ERR_EDGEWARD_200', 'Authorization: header is required (Bearer <API key>)');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match?.[1])
    throw new ApiError('ERR_EDGEWARD_200', 'Authorization: must have the form "Bearer <API key>"');
  return match[1];
}

function checkVersion(request: FastifyRequest): void {
  const version = request.headers['svc-version'];
  if (version === undefined) {
    throw new ApiError('ERR_EDGEWARD_101', 'Svc-Version: header is required; supported versions: 2');
  }
  if (typeof version !== 'string' || !SUPPORTED_VERSIONS.includes(version.trim())) {
    throw new ApiError(
      'ERR_EDGEWARD_101',
      `Svc-Version: version '${String(version)}' is not supported; supported versions: ${SUPPORTED_VERSIONS.join(', ')}`,
    );
  }
}

/**
 * Every non-public request: a known API key (401), then `Svc-Version: 2` (400). Keys verified once
 * are kept in `principals` (see `PrincipalCache` for how a revocation reaches it).
 */
export const authPlugin = fp(
  async (app: FastifyInstance, options: { db: Db; principals: PrincipalCache }) => {
    app.decorateRequest('principal', undefined);
    // Callback form: a key verified before (nearly every request) is answered without a promise.
    app.addHook('onRequest', (request, _reply, done) => {
      if (request.routeOptions.config.public) {
        done();
        return;
      }
      // `done` runs the rest of the request (hooks, the handler) in its own call: it is called once,
      // outside any try, so nothing it throws is mistaken for this hook's failure.
      let known: Principal | undefined;
      let tokenHash: string;
      try {
        tokenHash = hashToken(bearerToken(request));
        known = options.principals.peek(tokenHash);
        if (known) {
          request.principal = known;
          checkVersion(request);
        }
      } catch (error) {
        done(error as Error);
        return;
      }
      if (known) {
        done();
        return;
      }
      options.principals
        .lookup(tokenHash, () => authenticate(options.db, tokenHash))
        .then((principal) => {
          request.principal = principal;
          checkVersion(request);
        })
        .then(
          () => done(),
          (error: unknown) => done(error as Error),
        );
    });
  },
);
