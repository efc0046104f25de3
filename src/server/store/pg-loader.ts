import type pg from 'pg';
import { lazyModule } from '../../lib/lazy-module.js';

/** The PostgreSQL driver, loaded only by a server given `--database-url` (SQLite needs none of it). */
export const loadPg: () => Promise<typeof pg> = lazyModule('the PostgreSQL driver (pg)', async () => {
  return (await import('pg')).default;
});
