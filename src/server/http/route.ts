import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { affectsPrincipals } from '../auth/principal-cache.js';
import { ApiError } from '../errors/api-error.js';
import { describeZodError } from '../errors/zod-issues.js';
import type { ChangeSignal } from '../events/change-signal.js';
import { type AccountEvent, recordEvent } from '../events/outbox.js';
import { requestFingerprint, runIdempotent } from '../idempotency/idempotency.js';
import type { Db } from '../store/database.js';
import { inWriteTransaction } from '../store/write-transaction.js';
import { quickParserOf } from './common-inputs.js';
import type { RequestContext } from './context.js';
import { checkResponse } from './response-check.js';

type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/** What a route says about the account event its success records. */
export interface RouteEvent extends AccountEvent {
  /**
   * The resource as it now stands, when the response is not it (a module PUT answers with the
   * module, but the event is about the edge). Default: the response.
   */
  object?: (input: { params: unknown; ctx: RequestContext }) => Promise<unknown>;
}

export interface RouteDefinition<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
  R extends z.ZodType = z.ZodType,
  X = undefined,
> {
  method: Method;
  /** Fastify path syntax: `/ip_policies/:id`. */
  url: string;
  operationId: string;
  summary: string;
  tag: string;
  params?: P;
  query?: Q;
  body?: B;
  /** 204 routes have no response schema. */
  status: 200 | 201 | 204;
  response?: R;
  /** POST creates accept an `Idempotency-Key` header. */
  idempotent?: boolean;
  /** The account event a success records in the outbox, in the same transaction. */
  event?: RouteEvent;
  /**
   * Slow work (key generation, signing, a call to another service) done BEFORE the write
   * transaction, since with SQLite every request waits while one is open; `ctx.db` reads outside it.
   */
  prepare?: (input: { params: z.output<P>; body: z.output<B>; ctx: RequestContext }) => Promise<X>;
  handler: (input: {
    params: z.output<P>;
    query: z.output<Q>;
    body: z.output<B>;
    ctx: RequestContext;
    prepared: X;
  }) => Promise<z.input<R> | undefined>;
}

/** Route definitions kept for the OpenAPI document. */
export type AnyRouteDefinition = RouteDefinition<z.ZodType, z.ZodType, z.ZodType, z.ZodType, unknown>;

export interface RouteHost {
  routes: AnyRouteDefinition[];
  contextFor(request: FastifyRequest, db: Db): RequestContext;
  db: Db;
  /** For reads outside a transaction: GET routes and `prepare` (see `Store.reads`). */
  reads: Db;
  /** Check every handler result against the route's response schema (tests): see `checkResponse`. */
  validateResponses: boolean;
  /** Told of every committed write, so connected edges get the new configuration. */
  changes: ChangeSignal;
}

declare module 'fastify' {
  interface FastifyInstance {
    edgeward: RouteHost;
  }
}

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

function parse<T extends z.ZodType>(schema: T | undefined, value: unknown, root: string): z.output<T> {
  if (!schema) return undefined as z.output<T>;
  // reportInput lets the message say what type was received; the input itself is never echoed.
  const result = schema.safeParse(value, { reportInput: true });
  if (!result.success) throw new ApiError('ERR_EDGEWARD_100', describeZodError(result.error, root));
  return result.data;
}

/**
 * Registers one schema-first route: zod validates params, query and body (a 400 names the field),
 * writes run in one transaction (serializable, retried on conflict: see `inWriteTransaction`), and
 * POST creates honour `Idempotency-Key`.
 */
export function defineRoute<
  P extends z.ZodType,
  Q extends z.ZodType,
  B extends z.ZodType,
  R extends z.ZodType,
  X = undefined,
>(app: FastifyInstance, route: RouteDefinition<P, Q, B, R, X>): void {
  app.edgeward.routes.push(route as unknown as AnyRouteDefinition);
  const touchesPrincipals = route.event !== undefined && affectsPrincipals(route.event);
  // Ids and paging go through a precompiled check; zod parses whatever it does not accept.
  const quickParams = quickParserOf(route.params);
  const quickQuery = quickParserOf(route.query);
  app.route({
    method: route.method,
    url: route.url,
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      const params =
        (quickParams?.(request.params) as z.output<P> | undefined) ?? parse(route.params, request.params, '');
      const rawQuery = request.query ?? {};
      const query = (quickQuery?.(rawQuery) as z.output<Q> | undefined) ?? parse(route.query, rawQuery, '');
      // Only a missing body means "no fields"; a JSON null is a wrong type like any other.
      const rawBody = request.body === undefined ? {} : withoutEchoedPathParams(request.body, request.params);
      const body = route.body ? parse(route.body, rawBody, '') : undefined;
      refuseNulCharacters(body, '');
      const host = app.edgeward;
      // A context only for routes that prepare: every request passes here.
      const prepared = (
        route.prepare
          ? await route.prepare({
              params,
              body: body as z.output<B>,
              ctx: host.contextFor(request, host.reads),
            })
          : undefined
      ) as X;
      const run = async (db: Db) => {
        const ctx = host.contextFor(request, db);
        const result = await route.handler({ params, query, body: body as z.output<B>, ctx, prepared });
        // Inside the transaction: a response that drifted from its schema commits nothing.
        if (host.validateResponses) checkResponse(route.operationId, route.response, result);
        if (route.event && !ctx.isUnchanged()) {
          const object = route.event.object ? await route.event.object({ params, ctx }) : result;
          await recordEvent(db, route.event, eventObjectId(params, result), object);
        }
        if (route.method !== 'GET' && !ctx.isUnchanged()) await host.changes.inTransaction(db);
        if (touchesPrincipals) await host.changes.principalsChangedInTransaction(db);
        return result;
      };
      const committed = () => {
        host.changes.committed();
        if (touchesPrincipals) host.changes.principalsCommitted();
      };

      if (route.method === 'GET') {
        return send(reply, route.status, await run(host.reads));
      }
      const idempotencyKey = route.idempotent ? request.headers['idempotency-key'] : undefined;
      if (typeof idempotencyKey === 'string') {
        if (!IDEMPOTENCY_KEY.test(idempotencyKey)) {
          throw new ApiError(
            'ERR_EDGEWARD_106',
            'Idempotency-Key: must be 1 to 255 printable ASCII characters',
          );
        }
        const { principal, secretBox } = host.contextFor(request, host.db);
        const outcome = await runIdempotent({
          db: host.db,
          principalId: principal.id,
          secretBox,
          key: idempotencyKey,
          fingerprint: requestFingerprint(secretBox, route.method, route.url, request.params, body),
          status: route.status,
          run,
        });
        if (outcome.replayed) reply.header('Idempotent-Replayed', 'true');
        else committed();
        return send(reply, outcome.status, outcome.payload);
      }
      const result = await inWriteTransaction(host.db, run);
      committed();
      return send(reply, route.status, result);
    },
  });
}

/**
 * Clients generated for the API this one follows repeat the path's ids in update bodies
 * (`PATCH /ip_policies/{id}` with `{"id": ..., ...}`): a repeated path parameter is accepted when it
 * equals the path's value and dropped before validation; a different value is a 400 that names it.
 */
function withoutEchoedPathParams(body: unknown, pathParams: unknown): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  const params = (pathParams ?? {}) as Record<string, string>;
  const echoed = Object.keys(params).filter((name) => Object.hasOwn(body, name));
  if (echoed.length === 0) return body;
  const rest: Record<string, unknown> = { ...(body as Record<string, unknown>) };
  for (const name of echoed) {
    if (rest[name] !== params[name]) {
      throw new ApiError('ERR_EDGEWARD_100', `${name}: must be the same as the ${name} in the path`);
    }
    delete rest[name];
  }
  return rest;
}

/**
 * NUL cannot be stored in PostgreSQL text (and is never meaningful here): refuse it by field name
 * rather than let the database turn it into a 500.
 */
function refuseNulCharacters(value: unknown, path: string): void {
  if (typeof value === 'string') {
    if (value.includes('\u0000'))
      throw new ApiError('ERR_EDGEWARD_100', `${path || 'body'}: must not contain NUL characters`);
  } else if (Array.isArray(value)) {
    value.forEach((item, index) => {
      refuseNulCharacters(item, `${path}[${index}]`);
    });
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (key.includes('\u0000'))
        throw new ApiError('ERR_EDGEWARD_100', `${path || 'body'}: keys must not contain NUL characters`);
      refuseNulCharacters(item, path ? `${path}.${key}` : key);
    }
  }
}

/** The changed object: the `:id` of the path, else the `id` of a created resource. */
function eventObjectId(params: unknown, result: unknown): string {
  const fromPath = (params as { id?: unknown } | undefined)?.id;
  if (typeof fromPath === 'string') return fromPath;
  const created = (result as { id?: unknown } | undefined)?.id;
  if (typeof created === 'string') return created;
  throw new Error('a route that records an event needs an :id path parameter or a response with an id');
}

function send(reply: FastifyReply, status: number, payload: unknown) {
  if (status === 204) return reply.code(204).send();
  return reply.code(status).send(payload);
}
