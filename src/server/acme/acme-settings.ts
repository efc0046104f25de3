/** How the server obtains certificates by ACME (`edgeward server --acme-*`). */
export interface AcmeSettings {
  directoryUrl: string;
  /** The account's contact: the CA's expiry and policy mail goes there. */
  email: string;
  /** PEM of the CA(s) the directory's HTTPS certificate chains to, for a private ACME server. */
  caBundlePem?: string | undefined;
  /**
   * The domains whose names (the domain itself and every name under it) edges get certificates
   * for; empty: every name. Agent ingresses ask explicitly and are not limited by it.
   */
  domains: string[];
  /** Challenge types to use, in order of preference; the first one the CA offers is taken. */
  challenges: ChallengeType[];
  /** After a failure: the first retry's delay, doubled per failure in a row up to `retryMaxMs`. */
  retryMinMs: number;
  retryMaxMs: number;
  /** How often this replica looks for certificates due (changes to edges also wake it). */
  pollMs: number;
  /** How long a replica holds a certificate's job before another may take it over. */
  leaseMs: number;
  /** Polling an order, authorization or challenge: attempts and delays between them. */
  pollAttempts: number;
  pollMinMs: number;
  pollMaxMs: number;
  /** One HTTP request to the CA. */
  requestTimeoutMs: number;
  /** Jobs one replica runs at once. */
  concurrency: number;
}

export type ChallengeType = 'http-01' | 'tls-alpn-01';
export const CHALLENGE_TYPES: readonly ChallengeType[] = ['tls-alpn-01', 'http-01'];

export const ACME_DEFAULTS: Omit<AcmeSettings, 'directoryUrl' | 'email' | 'caBundlePem'> = {
  domains: [],
  challenges: ['tls-alpn-01', 'http-01'],
  retryMinMs: 60_000,
  retryMaxMs: 24 * 60 * 60 * 1000,
  pollMs: 30_000,
  leaseMs: 5 * 60 * 1000,
  pollAttempts: 15,
  pollMinMs: 1_000,
  pollMaxMs: 10_000,
  requestTimeoutMs: 30_000,
  concurrency: 2,
};
