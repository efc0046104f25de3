import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertEdgeReferences } from '../support/edge-references.js';
import { ADMIN_KEY, startTestServer, type TestServer } from '../support/server.js';

// Routes check before they write ("is it the last key?", "does an edge use this CA?"). Run one after
// the other (as SQLite runs write transactions) the check holds; run side by side on PostgreSQL, two
// requests could each pass their check on what the other is about to change. Several rounds, since
// a race shows only when the requests overlap.
const ROUNDS = 8;

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t.stop());

describe('concurrent writes', () => {
  it("never deletes the admin's last two keys at once: one DELETE wins, the other is refused", async () => {
    // Its own server: these deletes take the admin's bootstrap key away.
    const own = await startTestServer();
    try {
      const adminId = own.server.bootstrap.adminUserId;
      const adminKeys = () =>
        own.server.app.edgeward.db
          .selectFrom('api_keys')
          .select('id')
          .where('owner_id', '=', adminId)
          .execute();
      const first = await adminKeys();
      expect(first).toHaveLength(1);
      let kept = { id: first[0]?.id as string, token: ADMIN_KEY };
      for (let round = 0; round < ROUNDS; round++) {
        const created = await own.api<{ id: string; token: string }>(
          'POST',
          '/api_keys',
          {},
          { key: kept.token },
        );
        expect(created.status).toBe(201);
        const keys = [kept, { id: created.body.id, token: created.body.token }];
        // Each key deletes the other: neither request removes the key it authenticates with.
        const deletes = await Promise.all([
          own.api('DELETE', `/api_keys/${keys[0]?.id}`, undefined, { key: keys[1]?.token as string }),
          own.api('DELETE', `/api_keys/${keys[1]?.id}`, undefined, { key: keys[0]?.token as string }),
        ]);
        const statuses = deletes.map((response) => response.status).sort();
        // 409 when the loser got past authentication first, 401 when its key was already gone.
        expect([JSON.stringify([204, 409]), JSON.stringify([204, 401])], `round ${round}`).toContain(
          JSON.stringify(statuses),
        );
        const left = await adminKeys();
        expect(left, `round ${round}`).toHaveLength(1);
        kept = keys.find((key) => key.id === left[0]?.id) as { id: string; token: string };
      }
    } finally {
      await own.stop();
    }
  });

  it('never leaves an edge trusting a certificate authority deleted at the same moment', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { caId } = await insertEdgeReferences(t, `race${round}`);
      const [edge, deleted] = await Promise.all([
        t.api('POST', '/edges/tls', { mutual_tls: { certificate_authority_ids: [caId] } }),
        t.api('DELETE', `/certificate_authorities/${caId}`),
      ]);
      const outcome = [edge.status, deleted.status];
      // Either order is fine; both succeeding is not.
      expect([JSON.stringify([201, 409]), JSON.stringify([400, 204])], `round ${round}`).toContain(
        JSON.stringify(outcome),
      );
      const ca = await t.api('GET', `/certificate_authorities/${caId}`);
      expect(ca.status, `round ${round}`).toBe(edge.status === 201 ? 200 : 404);
    }
  });
});
