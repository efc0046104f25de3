import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { packageVersion } from '../../lib/package-version.js';
import { buildOpenApiDocument } from './document.js';

/**
 * Serves the OpenAPI document of every route registered before this plugin at `/openapi.json`,
 * and a browsable reference of it at `/docs` (Swagger UI, its assets served from this process, so
 * it works without internet). Neither needs a key: the document names no secret.
 */
export async function openApiPlugin(app: FastifyInstance): Promise<void> {
  // Built at the first request for it, not at start-up: the document holds about 4 MiB, which a
  // server nobody reads it from never needs. @fastify/swagger keeps and serves the object it is
  // given, so that object is filled in place.
  const document: Record<string, unknown> = {};
  let built = false;
  const documentOnce = (): Record<string, unknown> => {
    if (!built) {
      Object.assign(document, openApiDocumentOf(app));
      built = true;
    }
    return document;
  };
  app.get('/openapi.json', { config: { public: true } }, async () => documentOnce());
  await app.register(async (docs) => {
    // Every route of this scope (Swagger UI's page, assets and its copy of the document) is public.
    docs.addHook('onRoute', (route) => {
      route.config = { ...route.config, public: true };
    });
    docs.addHook('onRequest', async () => {
      documentOnce();
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
  return buildOpenApiDocument(app.edgeward.routes, packageVersion());
}
