import type { webhookProviders } from '../../../../schemas/route-modules.js';

export type WebhookProvider = (typeof webhookProviders)[number];

export interface SignedRequest {
  method: string;
  /** The full public URL the sender called: https://host[:port]/path?query (Twilio and Square sign it). */
  url: string;
  /** Lower-cased header names, as node's IncomingHttpHeaders. */
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export type WebhookVerdict = { ok: true } | { ok: false; reason: string };

export interface WebhookVerifierOptions {
  /** ms since epoch; default Date.now. Used for timestamp tolerances (Stripe, Slack: 5 minutes). */
  now?: () => number;
  /**
   * SNS only: fetches the PEM certificate at SigningCertURL. Default: HTTPS GET with undici, cached
   * per URL, only for URLs the SNS docs allow (https, host sns.<region>.amazonaws.com[.cn], path
   * ending .pem).
   */
  fetchSnsCertificate?: (url: string) => Promise<string>;
}

export type WebhookVerifier = (request: SignedRequest) => Promise<WebhookVerdict>;

/** What a provider's verifier gets: the options with their defaults filled in. */
export interface ProviderContext {
  now: () => number;
  fetchSnsCertificate: (url: string) => Promise<string>;
}

/** One provider's check; may be synchronous (only SNS fetches anything). */
export type ProviderCheck = (request: SignedRequest) => WebhookVerdict | Promise<WebhookVerdict>;
