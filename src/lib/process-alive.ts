/** Whether a process with this id (or, negative, this process group) exists: signal 0 probes it. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
