import { existsSync, lstatSync, readdirSync, readFileSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const CGROUP_ROOT = '/sys/fs/cgroup';
/** The cgroup kubelet puts every pod under (cgroupfs driver), in each hierarchy. */
const POD_CGROUP = 'kubepods';

/** The cgroup hierarchies of the host (v1 controllers, or the cgroup2 root). */
function hierarchies(): string[] {
  if (!existsSync(CGROUP_ROOT)) return [];
  if (existsSync(join(CGROUP_ROOT, 'cgroup.controllers'))) return [CGROUP_ROOT];
  return readdirSync(CGROUP_ROOT)
    .map((name) => join(CGROUP_ROOT, name))
    .filter((path) => !lstatSync(path).isSymbolicLink());
}

/** The pods' cgroups that exist now, one per hierarchy. */
export function podCgroups(): string[] {
  return hierarchies()
    .map((hierarchy) => join(hierarchy, POD_CGROUP))
    .filter((path) => existsSync(path));
}

/** Every cgroup folder under `root`, deepest first. */
function cgroupTree(root: string): string[] {
  const children = readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => cgroupTree(join(root, entry.name)));
  return [...children, root];
}

function cgroupProcesses(cgroup: string): number[] {
  try {
    return readFileSync(join(cgroup, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch (error) {
    // Removed meanwhile: no processes.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new Error(`reading ${cgroup}/cgroup.procs`, { cause: error });
  }
}

/** SIGKILLs every process in the pods' cgroups (containers, their pause processes) until none is left. */
export async function killPodProcesses(): Promise<string[]> {
  for (let round = 0; round < 50; round++) {
    const pids = podCgroups().flatMap((root) => cgroupTree(root).flatMap(cgroupProcesses));
    if (pids.length === 0) return [];
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
      }
    }
    await sleep(100);
  }
  return ['processes in the pods cgroups would not die'];
}

/** Removes the pods' cgroups, deepest first; returns what could not be removed. */
export async function removePodCgroups(): Promise<string[]> {
  const problems: string[] = [];
  for (const root of podCgroups()) {
    for (const cgroup of cgroupTree(root)) {
      // A killed process leaves its cgroup a moment after it exits.
      for (let attempt = 0; ; attempt++) {
        try {
          rmdirSync(cgroup);
          break;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') break;
          if (attempt >= 50) {
            problems.push(`the cgroup ${cgroup}: ${(error as Error).message}`);
            break;
          }
          await sleep(100);
        }
      }
    }
  }
  return problems;
}
