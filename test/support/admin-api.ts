import { fetch } from 'undici';

/**
 * Calls the management API of a server process with an admin key, as a user's script would: JSON
 * in and out, `Svc-Version: 2`, and an error naming the call for any answer but a success.
 */
export function adminApi(baseUrl: () => string, adminKey: string) {
  return async (method: string, path: string, body?: unknown): Promise<Record<string, unknown>> => {
    const response = await fetch(`${baseUrl()}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${adminKey}`,
        'svc-version': '2',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  };
}

/** The arguments of `ssh -R 0:127.0.0.1:PORT … tunnel --label …`: the unmodified OpenSSH client as an agent. */
export function sshTunnelArgs(options: {
  port: number;
  keyPath: string;
  forwardPort: number;
  label: string;
}) {
  return [
    '-p',
    String(options.port),
    '-i',
    options.keyPath,
    '-o',
    'StrictHostKeyChecking=no',
    '-o',
    'UserKnownHostsFile=/dev/null',
    '-o',
    'BatchMode=yes',
    '-o',
    'ExitOnForwardFailure=yes',
    '-R',
    `0:127.0.0.1:${options.forwardPort}`,
    'edge@127.0.0.1',
    'tunnel',
    '--label',
    options.label,
  ];
}
