import { z } from 'zod';
import { errorBody } from '../../schemas/common.js';
import { ID_PREFIXES, idPattern } from '../../schemas/id-prefixes.js';
import { errorCatalogue } from '../errors/catalogue.js';
import type { AnyRouteDefinition } from '../http/route.js';

type JsonSchema = Record<string, unknown>;

const SCHEMA_REF = '#/components/schemas/';

/**
 * Shared schemas (those with a zod `meta({ id })`) go to `components/schemas`, so every `$ref`
 * resolves inside the document. A schema whose request form differs from its response form
 * (defaults make fields optional on input) gets a second component, `<Name>Input`.
 */
class SchemaComponents {
  readonly schemas: Record<string, JsonSchema> = {};
  private readonly texts = new Map<string, string>();

  convert(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
    const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as JsonSchema;
    delete out.$schema;
    const defs = (out.$defs ?? {}) as Record<string, JsonSchema>;
    delete out.$defs;
    const names = new Map<string, string>();
    for (const [name, definition] of Object.entries(defs)) {
      names.set(name, this.componentName(name, definition, io));
    }
    const rewrite = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(rewrite);
      if (value === null || typeof value !== 'object') return value;
      return Object.fromEntries(
        Object.entries(value).map(([key, item]) => {
          if (key === '$ref' && typeof item === 'string' && item.startsWith('#/$defs/')) {
            const name = item.slice('#/$defs/'.length);
            return [key, `${SCHEMA_REF}${names.get(name) ?? name}`];
          }
          return [key, rewrite(item)];
        }),
      );
    };
    for (const [name, definition] of Object.entries(defs)) {
      const component = names.get(name) ?? name;
      this.schemas[component] ??= rewrite(definition) as JsonSchema;
    }
    return rewrite(out) as JsonSchema;
  }

  private componentName(name: string, definition: JsonSchema, io: 'input' | 'output'): string {
    const text = JSON.stringify(definition);
    for (const candidate of io === 'input' ? [name, `${name}Input`] : [name, `${name}Output`]) {
      const known = this.texts.get(candidate);
      if (known === undefined) {
        this.texts.set(candidate, text);
        return candidate;
      }
      if (known === text) return candidate;
    }
    throw new Error(`OpenAPI: schema '${name}' has more than two shapes; give the others their own meta id`);
  }
}

/** The id pattern of path parameter `name` of `url`: the prefix of the collection it names. */
function pathIdSchema(url: string, name: string): JsonSchema | undefined {
  const at = url.indexOf(`/:${name}`);
  if (at < 0) return undefined;
  const collection = url.slice(0, at);
  const prefix = ID_PREFIXES[collection];
  if (!prefix) return undefined;
  return { type: 'string', pattern: idPattern(prefix), description: `a \`${prefix}_\` id` };
}

/** What the server accepts in `limit`, stated as the integer it is rather than the string it parses. */
const LIMIT_SCHEMA: JsonSchema = {
  type: 'integer',
  minimum: 1,
  maximum: 100,
  default: 100,
  description: 'page size, 1..100',
};

function parameters(route: AnyRouteDefinition, components: SchemaComponents): JsonSchema[] {
  const out: JsonSchema[] = [];
  for (const [location, schema] of [
    ['path', route.params],
    ['query', route.query],
  ] as const) {
    if (!schema) continue;
    const object = components.convert(schema, 'input');
    const properties = (object.properties ?? {}) as Record<string, JsonSchema>;
    const required = new Set((object.required as string[] | undefined) ?? []);
    for (const [name, property] of Object.entries(properties)) {
      let documented = property;
      if (location === 'path') {
        documented = pathIdSchema(route.url, name) ?? property;
        if (documented === property && name.endsWith('id')) {
          throw new Error(
            `OpenAPI: no id prefix for '${name}' of ${route.url}; add its collection to ID_PREFIXES`,
          );
        }
      } else if (name === 'limit') {
        documented = LIMIT_SCHEMA;
      }
      out.push({
        name,
        in: location,
        required: location === 'path' || required.has(name),
        schema: documented,
      });
    }
  }
  return out;
}

const openApiPath = (url: string) => url.replace(/:([A-Za-z_]+)/g, '{$1}');

/** 405 is answered for paths, not operations: it is documented in docs/api.md, not per operation. */
const errorStatuses = [...new Set(Object.values(errorCatalogue).map((entry) => entry.status))]
  .filter((status) => status !== 405)
  .sort();

const OPERATION_ID_HEADER = { $ref: '#/components/headers/SvcOperationId' };

function responseHasProperty(route: AnyRouteDefinition, name: string): boolean {
  const shape = (route.response as { shape?: Record<string, unknown> } | undefined)?.shape;
  return shape !== undefined && name in shape;
}

/**
 * Links from a create to the operations on what it created (`POST /ip_policies` → `GET
 * /ip_policies/{id}`, its modules, its routes): documentation for people, and the map stateful
 * fuzzers walk.
 */
function createLinks(route: AnyRouteDefinition, routes: AnyRouteDefinition[]): JsonSchema | undefined {
  if (route.method !== 'POST' || route.status !== 201) return undefined;
  const itemPrefix = `${route.url}/:`;
  const links: Record<string, JsonSchema> = {};
  for (const target of routes) {
    if (!target.url.startsWith(itemPrefix)) continue;
    // A module or child the create did not make may not exist yet: a GET links only to the item.
    if (target.method === 'GET' && target.url.slice(itemPrefix.length).includes('/')) continue;
    const param = /^([A-Za-z_]+)/.exec(target.url.slice(itemPrefix.length))?.[1];
    if (!param) continue;
    // The created item's own key is in the response (`id`, or `type` for an event source); any
    // other parameter must come from the create's own path, or the link cannot be followed.
    const responseKey = responseHasProperty(route, param) ? param : 'id';
    const parameters: Record<string, string> = {};
    let resolvable = true;
    for (const [, name] of target.url.matchAll(/:([A-Za-z_]+)/g)) {
      if (!name) continue;
      if (name === param) parameters[name] = `$response.body#/${responseKey}`;
      else if (route.url.includes(`:${name}`)) parameters[name] = `$request.path.${name}`;
      else resolvable = false;
    }
    if (!resolvable) continue;
    links[target.operationId] = {
      operationId: target.operationId,
      parameters,
      description: `${target.summary}, for the ${param} just created`,
    };
  }
  return Object.keys(links).length > 0 ? links : undefined;
}

function successResponse(
  route: AnyRouteDefinition,
  routes: AnyRouteDefinition[],
  components: SchemaComponents,
): JsonSchema {
  const headers: Record<string, unknown> = { 'Svc-Operation-Id': OPERATION_ID_HEADER };
  if (route.idempotent) headers['Idempotent-Replayed'] = { $ref: '#/components/headers/IdempotentReplayed' };
  const response: JsonSchema = { description: route.summary, headers };
  if (route.response) {
    response.content = { 'application/json': { schema: components.convert(route.response, 'output') } };
  }
  const links = createLinks(route, routes);
  if (links) response.links = links;
  return response;
}

function errorResponses(): Record<string, JsonSchema> {
  const responses: Record<string, JsonSchema> = {};
  for (const status of errorStatuses) {
    responses[status] = {
      $ref: status === 429 ? '#/components/responses/RateLimited' : '#/components/responses/Error',
    };
  }
  return responses;
}

const DESCRIPTION = [
  'Tunnel credentials, edges, IP policies, certificates and event delivery for one account.',
  '',
  'Every request carries `Authorization: Bearer <API key>` and `Svc-Version: 2`. Bodies are JSON;',
  'an empty body sent with `Content-Type: application/json` counts as no body. An update body may',
  'repeat the path\'s ids (`{"id": ...}`) when they equal the path\'s. Every error is the `Error`',
  'schema; its `error_code` values are listed in docs/api.md (the error catalogue). A method a path does not have is a',
  '405 whose `Allow` header lists the methods it has.',
].join('\n');

/** OpenAPI 3.1 generated from the same zod schemas that validate requests; self-contained. */
export function buildOpenApiDocument(routes: AnyRouteDefinition[], version: string): JsonSchema {
  const components = new SchemaComponents();
  // `errorBody` has the meta id `Error`: converting it registers the component and returns its $ref.
  const errorSchema = components.convert(errorBody, 'output');
  // One named type for the version header, not one per operation in generated clients.
  components.schemas.SvcVersion = { type: 'string', enum: ['2'], description: 'API version' };
  const paths: Record<string, Record<string, JsonSchema>> = {};
  const tags = new Set<string>();
  for (const route of routes) {
    tags.add(route.tag);
    const operation: JsonSchema = {
      operationId: route.operationId,
      summary: route.summary,
      tags: [route.tag],
      parameters: [
        ...parameters(route, components),
        { $ref: '#/components/parameters/SvcVersion' },
        ...(route.idempotent ? [{ $ref: '#/components/parameters/IdempotencyKey' }] : []),
      ],
      responses: { [route.status]: successResponse(route, routes, components), ...errorResponses() },
    };
    if (route.body) {
      const schema = components.convert(route.body, 'input');
      // A body is required when it has required members; an all-optional body may be omitted.
      const required = Array.isArray(schema.required) && schema.required.length > 0;
      operation.requestBody = { required, content: { 'application/json': { schema } } };
    }
    const path = openApiPath(route.url);
    paths[path] ??= {};
    paths[path][route.method.toLowerCase()] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'edgeward management API',
      version,
      description: DESCRIPTION,
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: '/', description: 'the server that serves this document' }],
    security: [{ bearer: [] }],
    tags: [...tags].map((name) => ({ name, description: `Operations on ${name.toLowerCase()}` })),
    paths,
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'an API key of a user or bot (`ewk_...`)' },
      },
      parameters: {
        SvcVersion: {
          name: 'Svc-Version',
          in: 'header',
          required: true,
          description: 'API version; the only one is 2',
          schema: { $ref: `${SCHEMA_REF}SvcVersion` },
        },
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            'Retrying with the same key and body returns the original response for 24 hours; the same key with another body is a 409.',
          schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
        },
      },
      headers: {
        SvcOperationId: {
          description: 'the id of this request, repeated in an error body as `details.operation_id`',
          required: true,
          schema: { type: 'string', pattern: '^op_[0-9A-Za-z]+$' },
        },
        IdempotentReplayed: {
          description:
            '`true` when the response is a replay of an earlier request with the same Idempotency-Key',
          schema: { type: 'string', enum: ['true'] },
        },
        RetryAfter: {
          description: 'seconds to wait before retrying',
          required: true,
          schema: { type: 'string', pattern: '^[0-9]+$' },
        },
      },
      responses: {
        Error: {
          description: 'Error; `error_code` values are listed in the error catalogue, docs/api.md',
          headers: { 'Svc-Operation-Id': OPERATION_ID_HEADER },
          content: { 'application/json': { schema: errorSchema } },
        },
        RateLimited: {
          description: 'Rate limited (`ERR_EDGEWARD_700`): retry after `Retry-After` seconds',
          headers: {
            'Svc-Operation-Id': OPERATION_ID_HEADER,
            'Retry-After': { $ref: '#/components/headers/RetryAfter' },
          },
          content: { 'application/json': { schema: errorSchema } },
        },
      },
      schemas: components.schemas,
    },
  };
}
