import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { buildOpenApiDocument } from '../openapi/document.js';

const packageVersion = (
  JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** Serves the OpenAPI document of every route registered before this plugin. */
export async function openApiPlugin(app: FastifyInstance): Promise<void> {
  let document: unknown;
  app.get('/openapi.json', { config: { public: true } }, async () => {
    document ??= buildOpenApiDocument(app.edgeward.routes, packageVersion);
    return document;
  });
}

export function openApiDocumentOf(app: FastifyInstance): Record<string, unknown> {
  return buildOpenApiDocument(app.edgeward.routes, packageVersion);
}
