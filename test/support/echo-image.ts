import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packOciArchive } from '../../src/lib/oci-archive.js';

/** The workload image of the node tests: Debian's static busybox serving one CGI. */
export const ECHO_IMAGE = 'localhost/edgeward/echo:1';
export const ECHO_PORT = 8080;
/** The path whose answer names the pod that served it: `pod=<name> method=<m> uri=<uri>`. */
export const ECHO_PATH = '/cgi-bin/echo';

const CGI = `#!/bin/sh
read -r pod < /etc/hostname
printf 'Content-Type: text/plain\\r\\n\\r\\n'
printf 'pod=%s method=%s uri=%s\\n' "$pod" "$REQUEST_METHOD" "$REQUEST_URI"
`;

/**
 * An HTTP echo backend as an OCI archive: busybox httpd (Debian's busybox-static, a real server we
 * did not write) as uid 65534, answering ECHO_PATH with the pod's name (kubelet writes the pod name
 * to /etc/hostname). Written into `outDir`; needs umoci.
 */
export function buildEchoImage(outDir: string): string {
  const work = mkdtempSync(join(outDir, 'echo-'));
  const rootfs = join(work, 'rootfs');
  for (const folder of ['bin', 'www/cgi-bin', 'etc', 'tmp'])
    mkdirSync(join(rootfs, folder), { recursive: true });
  copyFileSync('/bin/busybox', join(rootfs, 'bin/busybox'));
  symlinkSync('busybox', join(rootfs, 'bin/sh'));
  writeFileSync(join(rootfs, 'www/cgi-bin/echo'), CGI);
  chmodSync(join(rootfs, 'www/cgi-bin/echo'), 0o755);
  writeFileSync(join(rootfs, 'www/index.html'), 'echo\n');
  const archive = join(outDir, 'echo.oci.tar');
  packOciArchive({
    rootfs,
    name: ECHO_IMAGE,
    archive,
    config: {
      entrypoint: ['/bin/busybox', 'httpd', '-f', '-v', '-p', String(ECHO_PORT), '-h', '/www'],
      exposedPorts: [String(ECHO_PORT)],
      user: '65534:65534',
    },
  });
  rmSync(work, { recursive: true, force: true });
  return archive;
}
