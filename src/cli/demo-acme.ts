import { writeFileSync } from 'node:fs';
import { freePort } from '../dev-cluster/free-port.js';
import { PEBBLE_TOOLS, startPebble } from '../dev-cluster/pebble.js';
import { ensureTools, missingTools } from '../dev-cluster/tools.js';
import { ACME_DEFAULTS, type AcmeSettings } from '../server/acme/acme-settings.js';

/** The demo's certificate authority: a local Pebble, the ACME CA the Let's Encrypt team tests with. */
export interface DemoAcme {
  settings: AcmeSettings;
  /** The port the first edge's TLS listener must take: where Pebble validates TLS-ALPN-01. */
  tlsPort: number;
  /** Pebble's root, written to the demo's folder for `curl --cacert`. */
  rootFile: string;
  rootPem: string;
  stop(): Promise<void>;
}

/**
 * Pebble on loopback, built first (once, about 20 s) when `build` allows it and Go is there;
 * undefined when it cannot run (`reason` says why), and the demo's HTTPS edge keeps the certificate
 * the edge generates.
 */
export async function demoAcme(
  /** Where to write the CA's root. */
  rootFile: string,
  build: boolean,
  say: (line: string) => void,
): Promise<DemoAcme | { reason: string }> {
  if (missingTools(PEBBLE_TOOLS).length > 0 && !build)
    return { reason: 'Pebble is not built here (npm run tools -- --acme builds it, about 20 s)' };
  let tools: Awaited<ReturnType<typeof ensureTools>>;
  try {
    tools = await ensureTools(PEBBLE_TOOLS, (line) => say(`  ${line}`));
  } catch (error) {
    return { reason: `Pebble could not be built: ${(error as Error).message.split('\n')[0]}` };
  }
  const tlsPort = await freePort();
  const pebble = await startPebble(tools, { httpPort: await freePort(), tlsPort, keyAlgorithm: 'ecdsa' });
  const rootPem = await pebble.rootPem();
  writeFileSync(rootFile, rootPem);
  return {
    settings: {
      ...ACME_DEFAULTS,
      directoryUrl: pebble.directoryUrl,
      email: 'demo@example.com',
      caBundlePem: pebble.caBundlePem,
      challenges: ['tls-alpn-01'],
      retryMinMs: 1_000,
      pollMinMs: 200,
      pollMaxMs: 1_000,
    },
    tlsPort,
    rootFile,
    rootPem,
    stop: () => pebble.stop(),
  };
}
