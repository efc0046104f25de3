import { defineConfig } from 'vitest/config';

/**
 * The server suites that run on PostgreSQL too: what touches SQL beyond the generic collection
 * code, transactions, migrations, concurrency, replicas, sealed storage and paging. The pure
 * HTTP-shape suites (wire habits, validation messages, the OpenAPI document, the generated client)
 * and the per-resource suites whose SQL is the shared collection code run once, on SQLite.
 */
const BOTH_STORES = [
  'test/client/client.test.ts', // paging iterators over keyset pages
  'test/server/api-key-revocation.test.ts', // principal cache cleared by another replica's NOTIFY
  'test/server/bot-users.test.ts', // owner checks before deletes, under SERIALIZABLE
  'test/server/concurrent-writes.test.ts', // races of the checks a route makes before it writes
  'test/server/credentials.test.ts', // token hashes, idempotent replays with the token
  'test/server/edge-feed.test.ts', // two replicas, the feed's NOTIFY and the command relay
  'test/server/event-destinations.test.ts', // sealed targets, searched in the database's rows
  'test/server/ip-policies.test.ts', // keyset paging and ordering under the ICU collation
  'test/server/protocol.test.ts', // idempotency records and their unique constraint
  'test/server/route-modules.test.ts', // module writes held by a transaction
  'test/server/schema-upgrade.test.ts', // migrations, and a rolling upgrade's prepared reads
  'test/server/ssh-certificate-authorities.test.ts', // sealed private keys, searched in the rows
  'test/server/tls-certificates.test.ts', // sealed private keys, searched in the rows
  'test/server/tunnel-sessions.test.ts', // session leases
  'test/events/events-outbox.test.ts', // the outbox
  'test/events/event-delivery-datadog.test.ts', // delivery rounds, leases and records
  'test/events/event-delivery-faults.test.ts', // replicas sharing delivery, a killed one's leases
  'test/edge/server-replicas.test.ts', // an edge's feed moving to a surviving replica (PostgreSQL only)
  'test/edge/acme-replicas.test.ts', // one replica per ACME order, one account (PostgreSQL only)
];

/** Suites that change what the whole cluster shares (CRDs, cluster-wide admission): run alone. */
const CLUSTER_WIDE = ['test/kubernetes/chart.test.ts'];

/** The fuzzer: CPU-bound for minutes, so it runs after the rest, not beside timing-sensitive suites. */
const FUZZ = ['test/fuzz/**/*.test.ts'];
/** The SQLite fuzz run's halves (test/fuzz/schemathesis.test.ts says which operations each takes). */
const FUZZ_SLICES = ['routes', 'others'] as const;
const POSTGRES = {
  globalSetup: ['test/support/postgres-global-setup.ts'],
  runner: './test/support/postgres-runner.ts',
};
const KUBERNETES = {
  globalSetup: ['test/support/kubernetes-global-setup.ts'],
  // The first run builds the tools (10-20 min); the setup prints progress meanwhile.
  hookTimeout: 120_000,
  testTimeout: 120_000,
};

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Most suites wait on processes, sockets and the apiserver rather than compute: three files at
    // a time keep both cores busy (vitest's default on 2 cores is one file at a time). Groups run
    // in order: everything else (0), then what must not share the machine or the cluster (1).
    maxWorkers: 3,
    // The default report; under each file's line, why its skipped tests were skipped (the default
    // report only counts them), and the reasons again at the end; a warning if the checkout gained
    // files during the run; then one plain closing line of totals that any CI log reader understands.
    reporters: [
      'default',
      './test/support/skip-reasons-reporter.ts',
      './test/support/checkout-leftovers-reporter.ts',
      './test/support/plain-summary-reporter.ts',
    ],
    projects: [
      {
        // Unit tests beside the code, and the documents' links: no server, no network, seconds
        // (`npm run test:unit`).
        extends: true,
        test: { name: 'unit', include: ['src/**/*.test.ts', 'test/docs/**/*.test.ts'] },
      },
      {
        // Real HTTP on a real SQLite file, real peers (curl, OpenSSH, openssl, moto, schemathesis).
        extends: true,
        test: {
          name: 'api',
          include: [
            'test/server/**/*.test.ts',
            'test/client/**/*.test.ts',
            'test/edge/**/*.test.ts',
            'test/events/**/*.test.ts',
            'test/generated-client/**/*.test.ts',
          ],
        },
      },
      {
        // The store-sensitive suites again, on PostgreSQL: one throwaway cluster per run (or the
        // server of EDGEWARD_TEST_POSTGRES_URL), a fresh database per test server. Without
        // PostgreSQL on the machine these tests are reported as skipped, with the reason.
        extends: true,
        test: { name: 'postgres', include: BOTH_STORES, ...POSTGRES },
      },
      {
        // Against a real kube-apiserver and etcd: one control plane per run (built from Go modules
        // on first use, then cached), or the cluster of KUBECONFIG when it is set.
        extends: true,
        test: {
          name: 'kubernetes',
          include: ['test/kubernetes/**/*.test.ts'],
          exclude: CLUSTER_WIDE,
          ...KUBERNETES,
        },
      },
      {
        // The image, built without Docker (debootstrap, umoci) and run with chroot: needs root.
        extends: true,
        test: {
          name: 'image',
          include: ['test/image/**/*.test.ts'],
          hookTimeout: 900_000,
          testTimeout: 120_000,
        },
      },
      {
        // Group 1: the chart test installs CRDs and cluster-wide admission policies, on a control
        // plane of its own.
        extends: true,
        test: {
          name: 'kubernetes-cluster',
          include: CLUSTER_WIDE,
          ...KUBERNETES,
          sequence: { groupOrder: 1 },
        },
      },
      {
        // Group 1: a node that runs pods (kubelet, containerd, runc, kube-proxy, CoreDNS) and the
        // chart's pods on it, from the image the image suite proved in group 0 (its build cache
        // warm by then). Root only; one node per host, so one file.
        extends: true,
        test: {
          name: 'node',
          include: ['test/node/**/*.test.ts'],
          // Starts the node tools' first build (about 20 min) at once, beside the first group.
          globalSetup: ['test/support/node-global-setup.ts'],
          hookTimeout: 2_400_000,
          testTimeout: 300_000,
          sequence: { groupOrder: 1 },
        },
      },
      // Group 1: schemathesis on SQLite (every phase), in two halves of the document that run side
      // by side (the coverage phase's boundary cases took 7 minutes in one run), and on PostgreSQL
      // (a smaller run).
      ...FUZZ_SLICES.map((slice) => ({
        extends: true as const,
        test: {
          name: `fuzz-${slice}`,
          include: FUZZ,
          provide: { fuzzSlice: slice },
          sequence: { groupOrder: 1 },
        },
      })),
      {
        extends: true,
        test: { name: 'fuzz-postgres', include: FUZZ, ...POSTGRES, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
