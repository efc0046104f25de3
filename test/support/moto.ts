import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { waitFor } from './eventually.js';

/**
 * moto in server mode (PyPI `moto[server]`): Kinesis, Firehose, CloudWatch Logs and STS on one
 * loopback port, speaking the real AWS wire protocols, for the AWS SDK clients the dispatcher uses.
 * `.ci/run` installs it; without it the suites that need it are skipped, saying why.
 */
export const MOTO_VERSION: string | undefined = (() => {
  try {
    return execFileSync('python3', ['-c', 'import moto, flask; print(moto.__version__)'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return undefined;
  }
})();
export const MOTO_MISSING =
  MOTO_VERSION === undefined
    ? 'moto[server] is not installed (pip install -r test/events/requirements.txt)'
    : undefined;

/** Credentials moto accepts (any); the region every test resource lives in. */
export const AWS_TEST_CREDENTIALS = {
  accessKeyId: 'AKIAEDGEWARDTEST0001',
  secretAccessKey: 'edgeward-test-secret',
};
export const AWS_TEST_REGION = 'us-east-1';
/** moto's default account id: ARNs of what the tests create carry it. */
export const MOTO_ACCOUNT = '123456789012';

export interface Moto {
  url: string;
  port: number;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  server.close();
  await once(server, 'close');
  return port;
}

/** Starts `moto_server` on a free loopback port and waits until it answers. */
export async function startMoto(port?: number): Promise<Moto> {
  const listenPort = port ?? (await freePort());
  const child: ChildProcess = spawn(
    'python3',
    ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(listenPort)],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, AWS_DEFAULT_REGION: AWS_TEST_REGION },
    },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const url = `http://127.0.0.1:${listenPort}`;
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`moto_server exited with ${child.exitCode}: ${stderr}`);
      try {
        const response = await fetch(`${url}/moto-api/`);
        await response.arrayBuffer();
        return response.ok;
      } catch {
        return false; // not listening yet
      }
    },
    { what: `moto_server on ${url}`, timeoutMs: 30_000, intervalMs: 100, detail: () => stderr },
  ).catch((error: unknown) => {
    child.kill('SIGKILL');
    throw error;
  });
  return {
    url,
    port: listenPort,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}
