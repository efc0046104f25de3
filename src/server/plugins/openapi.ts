import { readFileSync } from 'node:fs';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { buildOpenApiDocument } from '../openapi/document.js';

const packageVersion = (
  JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/**
 * Serves the OpenAPI document of every route registered before this plugin at `/openapi.json`,
 * and a browsable reference of it at `/docs` (Swagger UI, its assets served from this process, so
 * it works without internet). Neither needs a key: the document names no secret.
 */
export async function openApiPlugin(app: FastifyInstance): Promise<void> {
  const document = openApiDocumentOf(app);
  app.get('/openapi.json', { config: { public: true } }, async () => document);
  await app.register(async (docs) => {
    // Every route of this scope (Swagger UI's page, assets and its copy of the document) is public.
    docs.addHook('onRoute', (route) => {
      route.config = { ...route.config, public: true };
    });
    await docs.register(fastifySwagger, {
      mode: 'static',
      specification: { document: document as never },
    });
    await docs.register(fastifySwaggerUi, {
      routePrefix: '/docs',
      uiConfig: { docExpansion: 'none', deepLinking: true, defaultModelsExpandDepth: 0 },
    });
  });
}

export function openApiDocumentOf(app: FastifyInstance): Record<string, unknown> {
  return buildOpenApiDocument(app.edgeward.routes, packageVersion);
}
