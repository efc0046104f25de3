import { lazyModule } from '../lib/lazy-module.js';

/** `./x509.js` and @peculiar/x509 under it: about 8 MiB and most of a second to load, for a few routes. */
export type X509Module = typeof import('./x509.js');

export const loadX509: () => Promise<X509Module> = lazyModule(
  'X.509 support (@peculiar/x509)',
  () => import('./x509.js'),
);
