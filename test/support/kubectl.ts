import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Runs a cached tool (kubectl, helm) against a kubeconfig; rejects with its stderr on failure. */
export async function tool(
  binary: string,
  kubeconfig: string,
  args: string[],
  input?: string,
): Promise<{ stdout: string; stderr: string }> {
  const child = run(binary, args, {
    env: { ...process.env, KUBECONFIG: kubeconfig },
    maxBuffer: 16 * 1024 * 1024,
  });
  if (input !== undefined) child.child.stdin?.end(input);
  try {
    return await child;
  } catch (error) {
    const failure = error as Error & { stderr?: string };
    throw new Error(`${binary} ${args.join(' ')} failed: ${failure.stderr ?? failure.message}`, {
      cause: error,
    });
  }
}
