import type { TestProject } from 'vitest/node';
import { findPostgresBinaries, startTestCluster } from './postgres-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser URL test servers make their databases with; empty when the project is skipped. */
    postgresUrl: string;
    /** Why the postgres project's tests are skipped; empty when they run. */
    postgresSkipReason: string;
  }
}

const log = (line: string) => process.stderr.write(`[postgres setup] ${line}\n`);

/**
 * One PostgreSQL cluster for the whole run; each test server makes its own database in it. With
 * EDGEWARD_TEST_POSTGRES_URL set (a superuser URL), that server is used and nothing is started.
 * Without PostgreSQL the project's tests are reported as skipped (see postgres-runner.ts), not passed.
 */
export default async function setup(project: TestProject) {
  const skip = (reason: string) => {
    log(`SKIPPING the postgres project: ${reason}`);
    project.provide('postgresUrl', '');
    project.provide('postgresSkipReason', reason);
  };
  const given = process.env.EDGEWARD_TEST_POSTGRES_URL;
  if (given) {
    log('using the server of EDGEWARD_TEST_POSTGRES_URL');
    project.provide('postgresUrl', given);
    project.provide('postgresSkipReason', '');
    return;
  }
  const binaries = findPostgresBinaries();
  if ('missing' in binaries) return skip(binaries.missing);
  const started = Date.now();
  const cluster = await startTestCluster(binaries.dir, log);
  if ('missing' in cluster) return skip(cluster.missing);
  log(`cluster from ${binaries.dir} started in ${Date.now() - started} ms`);
  project.provide('postgresUrl', cluster.adminUrl);
  project.provide('postgresSkipReason', '');
  // A run interrupted with Ctrl-C still stops its postgres.
  process.once('SIGINT', () => void cluster.stop().finally(() => process.exit(130)));
  return () => cluster.stop();
}
