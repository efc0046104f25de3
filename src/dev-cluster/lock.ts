import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { processAlive } from '../lib/process-alive.js';

/**
 * Runs `work` while holding a lock folder, so two test runs (or `npm run tools` and a test run)
 * never build the same tool at once. A lock left by a process that died is taken over.
 */
export async function withFileLock<T>(
  path: string,
  log: (line: string) => void,
  work: () => Promise<T>,
): Promise<T> {
  let announced = false;
  for (;;) {
    try {
      mkdirSync(path);
      writeFileSync(join(path, 'pid'), String(process.pid));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      let owner = Number.NaN;
      try {
        owner = Number(readFileSync(join(path, 'pid'), 'utf8'));
      } catch {
        // The owner has made the folder but not yet written its pid: wait a moment.
      }
      if (Number.isInteger(owner) && !processAlive(owner)) {
        rmSync(path, { recursive: true, force: true });
        continue;
      }
      if (!announced) log(`waiting for another build to finish (${path})`);
      announced = true;
      await sleep(2000);
    }
  }
  try {
    return await work();
  } finally {
    rmSync(path, { recursive: true, force: true });
  }
}
