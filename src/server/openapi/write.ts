import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../app.js';
import { openApiDocumentOf } from './openapi-plugin.js';

/** The checked-in copy; a test fails when it differs from what the routes generate. */
export const OPENAPI_FILE = new URL('../../schemas/openapi.json', import.meta.url);

export async function generateOpenApiText(): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'edgeward-openapi-'));
  try {
    const { app } = await buildApp({ dataDir, adminApiKey: 'openapi-generator-does-not-serve-requests' });
    await app.ready();
    const text = `${JSON.stringify(openApiDocumentOf(app), null, 2)}\n`;
    await app.close();
    return text;
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
