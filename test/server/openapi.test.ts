import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
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

/** Every `$ref` of the document, with where it was found. */
function refsOf(value: unknown, at = '#'): { ref: string; at: string }[] {
  if (Array.isArray(value)) return value.flatMap((item, index) => refsOf(item, `${at}/${index}`));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, item]) =>
    key === '$ref' && typeof item === 'string' ? [{ ref: item, at }] : refsOf(item, `${at}/${key}`),
  );
}

function resolve(document: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  return ref
    .slice(2)
    .split('/')
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], document);
}

describe('OpenAPI document, as standard tools read it', () => {
  const document = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as Document & Record<string, unknown>;

  it('is self-contained: every $ref resolves inside it', () => {
    const refs = refsOf(document);
    expect(refs.length).toBeGreaterThan(100);
    const unresolved = refs.filter(({ ref }) => resolve(document, ref) === undefined);
    expect(unresolved).toEqual([]);
    expect(JSON.stringify(document)).not.toContain('$defs');
  });

  it('lints clean with Redocly CLI (recommended rules): no error, no warning', async () => {
    const cli = fileURLToPath(new URL('../../node_modules/@redocly/cli/bin/cli.js', import.meta.url));
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [cli, 'lint', fileURLToPath(OPENAPI_FILE), '--format=json', '--extends=recommended'],
      { env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } },
    );
    const report = JSON.parse(stdout.slice(stdout.indexOf('{'))) as {
      totals: { errors: number; warnings: number };
      problems: unknown[];
    };
    expect(report.problems).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  });

  it('states what the server enforces: id patterns, limit 1..100, the headers and the error body', () => {
    const get = document.paths['/ip_policies/{id}']?.get as unknown as {
      parameters: Record<string, unknown>[];
    };
    expect(get.parameters[0]).toMatchObject({
      name: 'id',
      in: 'path',
      schema: { type: 'string', pattern: '^ipp_[0-9A-Za-z]{27}$' },
    });
    const routeGet = document.paths['/edges/https/{edge_id}/routes/{id}']?.get as unknown as {
      parameters: { name: string; schema: { pattern: string } }[];
    };
    expect(routeGet.parameters.map((p) => [p.name, p.schema?.pattern])).toEqual(
      expect.arrayContaining([
        ['edge_id', '^edghts_[0-9A-Za-z]{27}$'],
        ['id', '^edghtsrt_[0-9A-Za-z]{27}$'],
      ]),
    );
    const list = document.paths['/bot_users']?.get as unknown as { parameters: Record<string, unknown>[] };
    expect(list.parameters).toContainEqual(
      expect.objectContaining({
        name: 'limit',
        in: 'query',
        schema: expect.objectContaining({ type: 'integer', minimum: 1, maximum: 100 }),
      }),
    );
    const components = document.components as Record<string, Record<string, Record<string, unknown>>>;
    expect(components.parameters?.SvcVersion).toMatchObject({
      name: 'Svc-Version',
      in: 'header',
      required: true,
    });
    expect(components.parameters?.IdempotencyKey).toMatchObject({ name: 'Idempotency-Key', in: 'header' });
    expect(components.schemas?.Error).toMatchObject({
      required: ['error_code', 'status_code', 'msg', 'details'],
    });
    const create = document.paths['/ip_policies']?.post as unknown as {
      responses: Record<string, { headers?: Record<string, unknown>; links?: Record<string, unknown> }>;
    };
    expect(Object.keys(create.responses['201']?.headers ?? {})).toContain('Svc-Operation-Id');
    expect(Object.keys(create.responses['201']?.links ?? {})).toEqual(
      expect.arrayContaining(['getIPPolicy', 'updateIPPolicy', 'deleteIPPolicy']),
    );
  });

  it('serves a browsable reference at /docs without a key', async () => {
    const page = await fetch(`${t.baseUrl}/docs/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await page.text()).toContain('swagger-ui');
    const served = await t.api('GET', '/docs/json', undefined, { key: null, version: null });
    expect(served.body).toEqual(document);
  });
});

describe('error catalogue', () => {
  it('is documented in docs/api.md, code by code', () => {
    const doc = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
    for (const [code, entry] of Object.entries(errorCatalogue)) {
      expect(doc, code).toMatch(new RegExp(`\\|\\s*${code}\\s*\\|\\s*${entry.status}\\s*\\|`));
    }
  });
});
