import { z } from 'zod';
import { errorBody } from '../../schemas/common.js';
import { errorCatalogue } from '../errors/catalogue.js';
import type { AnyRouteDefinition } from '../http/route.js';

type JsonSchema = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as JsonSchema;
  delete out.$schema;
  return out;
}

function parameters(route: AnyRouteDefinition): JsonSchema[] {
  const out: JsonSchema[] = [];
  for (const [location, schema] of [
    ['path', route.params],
    ['query', route.query],
  ] as const) {
    if (!schema) continue;
    const object = jsonSchema(schema, 'input');
    const properties = (object.properties ?? {}) as Record<string, JsonSchema>;
    const required = new Set((object.required as string[] | undefined) ?? []);
    for (const [name, property] of Object.entries(properties)) {
      out.push({ name, in: location, required: location === 'path' || required.has(name), schema: property });
    }
  }
  return out;
}

const errorStatuses = [...new Set(Object.values(errorCatalogue).map((entry) => entry.status))].sort();

/** OpenAPI 3.1 generated from the same zod schemas that validate requests. */
export function buildOpenApiDocument(routes: AnyRouteDefinition[], version: string): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of routes) {
    const path = route.url.replace(/:([A-Za-z_]+)/g, '{$1}');
    const responses: Record<string, JsonSchema> = {
      [route.status]: route.response
        ? {
            description: route.summary,
            content: { 'application/json': { schema: jsonSchema(route.response, 'output') } },
          }
        : { description: route.summary },
    };
    for (const status of errorStatuses) {
      responses[status] = { $ref: '#/components/responses/Error' };
    }
    const operation: JsonSchema = {
      operationId: route.operationId,
      summary: route.summary,
      tags: [route.tag],
      parameters: [
        ...parameters(route),
        { $ref: '#/components/parameters/SvcVersion' },
        ...(route.idempotent ? [{ $ref: '#/components/parameters/IdempotencyKey' }] : []),
      ],
      responses,
    };
    if (route.body) {
      const schema = jsonSchema(route.body, 'input');
      // A body is required when it has required members; an all-optional body may be omitted.
      const required = Array.isArray(schema.required) && schema.required.length > 0;
      operation.requestBody = { required, content: { 'application/json': { schema } } };
    }
    paths[path] ??= {};
    paths[path][route.method.toLowerCase()] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'edgeward management API',
      version,
      description: 'Tunnel credentials, edges, IP policies, certificates and event delivery for one account.',
    },
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      parameters: {
        SvcVersion: {
          name: 'Svc-Version',
          in: 'header',
          required: true,
          schema: { type: 'string', enum: ['2'] },
        },
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description: 'Retrying with the same key and body returns the original response for 24 hours.',
          schema: { type: 'string', minLength: 1, maxLength: 255 },
        },
      },
      responses: {
        Error: {
          description: 'Error; codes are listed in the README error catalogue',
          content: { 'application/json': { schema: jsonSchema(errorBody, 'output') } },
        },
      },
    },
  };
}
