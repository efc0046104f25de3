import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../errors/api-error.js';

/**
 * A method a path does not have is a 405 naming the methods it has (`Allow`, RFC 9110 §15.5.6),
 * not a 404: the path exists. Registered after every API route, from the same route table the
 * OpenAPI document is built from. It needs no key, as the document that lists the paths needs none.
 */
export async function methodNotAllowedPlugin(app: FastifyInstance): Promise<void> {
  const methodsByUrl = new Map<string, Set<string>>();
  for (const route of app.edgeward.routes) {
    const methods = methodsByUrl.get(route.url) ?? new Set<string>();
    methods.add(route.method);
    // Fastify answers HEAD for every GET route.
    if (route.method === 'GET') methods.add('HEAD');
    methodsByUrl.set(route.url, methods);
  }
  for (const [url, methods] of methodsByUrl) {
    const allow = [...methods].join(', ');
    const path = url.replace(/:([A-Za-z_]+)/g, '{$1}');
    const others = app.supportedMethods.filter((method) => !methods.has(method));
    const refuse = async (request: FastifyRequest) => {
      throw new ApiError('ERR_EDGEWARD_402', `${request.method}: not allowed on ${path}; allowed: ${allow}`, {
        headers: { Allow: allow },
      });
    };
    // Refused in onRequest, before Fastify reads a body (it would ask a QUERY for its media type).
    app.route({ method: others, url, config: { public: true }, onRequest: refuse, handler: refuse });
  }
}
