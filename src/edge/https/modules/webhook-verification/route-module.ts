import type { Readable } from 'node:stream';
import { ROUTE_MODULE_SCHEMAS } from '../../../../schemas/route-module-table.js';
import { headerSafe } from '../../forwarding-headers.js';
import { Pages } from '../../pages.js';
import type { EdgeRouteModule, ModuleConfig } from '../route-module.js';
import { createWebhookVerifier } from './index.js';
import { MAX_WEBHOOK_BODY_BYTES } from './shared.js';

async function readBody(body: Readable, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > limit) return undefined;
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

/**
 * `webhook_verification`: the body is read whole (up to 10 MiB) and its signature verified before
 * anything reaches the service (403, or 413 for a larger body); the service gets that same body.
 */
export const webhookVerificationModule: EdgeRouteModule<ModuleConfig<'webhook_verification'>> = {
  schema: ROUTE_MODULE_SCHEMAS.webhook_verification.input,
  compile(config) {
    const verify = createWebhookVerifier(config.provider, config.secret ?? null);
    return {
      async onRequest(exchange) {
        const body = await readBody(exchange.request.body, MAX_WEBHOOK_BODY_BYTES);
        if (!body) return exchange.page(Pages.tooLarge(MAX_WEBHOOK_BODY_BYTES));
        const verdict = await verify({
          method: exchange.request.method,
          url: exchange.href,
          headers: exchange.request.headers,
          body,
        });
        if (!verdict.ok) {
          const refusal = exchange.page(Pages.webhookRefused());
          refusal.headers['edgeward-webhook-refusal'] = headerSafe(verdict.reason);
          return refusal;
        }
        exchange.body = body;
        exchange.headers['content-length'] = String(body.length);
        delete exchange.headers['transfer-encoding'];
        return undefined;
      },
    };
  },
};
