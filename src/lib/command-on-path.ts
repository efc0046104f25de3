import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Whether an executable of this name is on PATH (as a shell's `command -v` finds it, without a shell). */
export function commandOnPath(name: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => {
    if (dir === '') return false;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Of these commands, those not on PATH. */
export const missingCommands = (names: readonly string[]): string[] =>
  names.filter((name) => !commandOnPath(name));
