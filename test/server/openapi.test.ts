import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCatalogue } from '../../src/server/errors/catalogue.js';
import { generateOpenApiText, OPENAPI_FILE } from '../../src/server/openapi/write.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t.stop());

type Operation = { operationId: string; responses: Record<string, unknown>; requestBody?: unknown };
type Document = { openapi: string; paths: Record<string, Record<string, Operation>> };

describe('OpenAPI document', () => {
  it('the checked-in copy is what the routes generate (run `npm run openapi` after changing a schema)', async () => {
    expect(readFileSync(OPENAPI_FILE, 'utf8')).toBe(await generateOpenApiText());
  });

  it('is served at /openapi.json without a key and matches the checked-in copy', async () => {
    const response = await t.api<Document>('GET', '/openapi.json', undefined, { key: null, version: null });
    expect(response.status).toBe(200);
    expect(response.body).toEqual(JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')));
    expect(response.body.openapi).toBe('3.1.0');
  });

  it('describes every route once, with a unique operation id and a success response', () => {
    const document = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as Document;
    const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
    );
    const ids = operations.map((o) => o.operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(operations.length).toBe(t.server.app.edgeward.routes.length);
    for (const { path, method, operation } of operations) {
      const success = Object.keys(operation.responses).filter((status) => status.startsWith('2'));
      expect(success, `${method} ${path}`).toHaveLength(1);
    }
    for (const path of [
      '/credentials',
      '/ssh_credentials',
      '/ip_policies',
      '/ip_policy_rules',
      '/reserved_addrs',
    ]) {
      expect(Object.keys(document.paths[path] ?? {}).sort(), path).toEqual(['get', 'post']);
    }
    expect(document.paths['/credentials/{id}']?.patch?.requestBody).toBeDefined();
  });
});

describe('error catalogue', () => {
  it('is documented in the README, code by code', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    for (const [code, entry] of Object.entries(errorCatalogue)) {
      expect(readme, code).toMatch(new RegExp(`\\|\\s*${code}\\s*\\|\\s*${entry.status}\\s*\\|`));
    }
  });
});
