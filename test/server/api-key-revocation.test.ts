import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/server/start.js';
import { createBotWithKey } from '../support/principals.js';
import { projectStore, startTestServer, type TestServer } from '../support/server.js';

/**
 * Verified keys are kept in memory (no query per request); a revocation must still take effect at
 * once where it was made, and within a second on every other replica of a PostgreSQL deployment.
 */
describe('revoking an API key others have just used', () => {
  let t: TestServer;
  let replica: RunningServer | undefined;
  beforeAll(async () => {
    t = await startTestServer();
    if (t.store === 'postgres') replica = await t.startReplica();
  });
  afterAll(() => t?.stop());

  /** The status a request with `key` gets from the server at `baseUrl`. */
  const statusAt = async (baseUrl: string, key: string) =>
    (await t.api('GET', `${baseUrl}/ip_policies`, undefined, { key })).status;

  it('refuses a deleted key on the very next request, here', async () => {
    const { body } = await t.api<{ id: string; token: string }>('POST', '/api_keys', {});
    for (let i = 0; i < 3; i++) expect(await statusAt(t.baseUrl, body.token)).toBe(200);
    expect((await t.api('DELETE', `/api_keys/${body.id}`)).status).toBe(204);
    expect(await statusAt(t.baseUrl, body.token)).toBe(401);
  });

  it('refuses a deleted key and a deactivated bot on another replica within a second', async (context) => {
    context.skip(projectStore() === 'sqlite', 'replicas share a PostgreSQL database; SQLite has one process');
    const other = replica?.listenUrl as string;
    const { body } = await t.api<{ id: string; token: string }>('POST', '/api_keys', {});
    const bot = await createBotWithKey(t, 'replicated-revocation');
    for (const key of [body.token, bot.key]) expect(await statusAt(other, key)).toBe(200);

    const until = async (key: string, status: number): Promise<number> => {
      const started = performance.now();
      while ((await statusAt(other, key)) !== status) {
        if (performance.now() - started > 5_000) throw new Error(`still not ${status} after 5 s`);
      }
      return performance.now() - started;
    };
    expect((await t.api('DELETE', `/api_keys/${body.id}`)).status).toBe(204);
    const keyMs = await until(body.token, 401);
    expect((await t.api('PATCH', `/bot_users/${bot.botId}`, { active: false })).status).toBe(200);
    const botMs = await until(bot.key, 403);
    console.log(
      `revocation seen by the other replica after ${keyMs.toFixed(0)} ms (key), ${botMs.toFixed(0)} ms (bot)`,
    );
    expect(keyMs).toBeLessThan(1000);
    expect(botMs).toBeLessThan(1000);
    // Reactivated: the other replica lets the bot back in as promptly.
    expect((await t.api('PATCH', `/bot_users/${bot.botId}`, { active: true })).status).toBe(200);
    expect(await until(bot.key, 200)).toBeLessThan(1000);
  });
});
