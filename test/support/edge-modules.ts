import { expect } from 'vitest';
import type { TestServer } from './server.js';

/** Module name -> [the PUT body, the read form it must produce]. */
export type ModuleCases = Readonly<Record<string, readonly [unknown, unknown]>>;

/**
 * For each module of the edge at `base` (which has none set): GET is 404 before, PUT answers the read
 * form, and GET of the module and of the edge show it; then DELETE unsets each one (a retried delete
 * succeeds too), after which GET is 404 again and the edge shows null.
 */
export async function expectModuleRoundTrips(
  t: TestServer,
  base: string,
  modules: ModuleCases,
): Promise<void> {
  for (const [name, [input, output]] of Object.entries(modules)) {
    expect((await t.api('GET', `${base}/${name}`)).status, name).toBe(404);
    const put = await t.api('PUT', `${base}/${name}`, input);
    expect(put.status, `${name}: ${JSON.stringify(put.body)}`).toBe(200);
    expect(put.body).toEqual(output);
    expect((await t.api('GET', `${base}/${name}`)).body).toEqual(output);
    expect((await t.api('GET', base)).body[name]).toEqual(output);
  }
  for (const name of Object.keys(modules)) {
    expect((await t.api('DELETE', `${base}/${name}`)).status).toBe(204);
    expect((await t.api('DELETE', `${base}/${name}`)).status, 'a retried delete succeeds').toBe(204);
    expect((await t.api('GET', `${base}/${name}`)).status).toBe(404);
    expect((await t.api('GET', base)).body[name]).toBeNull();
  }
}
