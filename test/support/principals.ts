import { expect } from 'vitest';
import type { TestServer } from './server.js';

export interface BotUserWire {
  id: string;
  uri: string;
  name: string;
  active: boolean;
  created_at: string;
}

/** Creates a bot user as the admin; `body` is the create request, e.g. `{ name: 'ci-bot' }`. */
export async function createBot(t: TestServer, body: Record<string, unknown>): Promise<BotUserWire> {
  const created = await t.api<BotUserWire>('POST', '/bot_users', body);
  expect(created.status).toBe(201);
  return created.body;
}

/** A bot user and an API key that acts as it: a caller who is not an admin. */
export async function createBotWithKey(t: TestServer, name: string): Promise<{ botId: string; key: string }> {
  const bot = await createBot(t, { name });
  const key = await t.api('POST', '/api_keys', { owner_id: bot.id });
  expect(key.status).toBe(201);
  return { botId: String(bot.id), key: String(key.body.token) };
}
