/**
 * The `webhook_verification` route module of the HTTPS edge: checks that a request was signed by
 * the configured sender before it reaches the upstream. One file per provider under `providers/`,
 * each citing the documentation it implements.
 */
import { bitbucketCheck } from './providers/bitbucket.js';
import { circleciCheck } from './providers/circleci.js';
import { githubCheck } from './providers/github.js';
import { gitlabCheck } from './providers/gitlab.js';
import { hubspotCheck } from './providers/hubspot.js';
import { intercomCheck } from './providers/intercom.js';
import { launchDarklyCheck } from './providers/launchdarkly.js';
import { mailchimpCheck } from './providers/mailchimp.js';
import { mailgunCheck } from './providers/mailgun.js';
import { pagerdutyCheck } from './providers/pagerduty.js';
import { sendgridCheck } from './providers/sendgrid.js';
import { shopifyCheck } from './providers/shopify.js';
import { slackCheck } from './providers/slack.js';
import { fetchSnsCertificate, snsCheck } from './providers/sns.js';
import { squareCheck } from './providers/square.js';
import { stripeCheck } from './providers/stripe.js';
import { twilioCheck } from './providers/twilio.js';
import { xeroCheck } from './providers/xero.js';
import { zendeskCheck } from './providers/zendesk.js';
import { fail, MAX_WEBHOOK_BODY_BYTES } from './shared.js';
import type {
  ProviderCheck,
  ProviderContext,
  SignedRequest,
  WebhookProvider,
  WebhookVerdict,
  WebhookVerifier,
  WebhookVerifierOptions,
} from './types.js';

export { isSnsSigningCertUrl } from './providers/sns.js';
export { MAX_WEBHOOK_BODY_BYTES } from './shared.js';
export type {
  SignedRequest,
  WebhookProvider,
  WebhookVerdict,
  WebhookVerifier,
  WebhookVerifierOptions,
} from './types.js';

type SecretCheck = (secret: string, context: ProviderContext) => ProviderCheck;

/** Every provider but SNS, which signs with its own certificate and has no secret. */
const WITH_SECRET: Record<Exclude<WebhookProvider, 'sns'>, SecretCheck> = {
  bitbucket: bitbucketCheck,
  circleci: circleciCheck,
  github: githubCheck,
  gitlab: gitlabCheck,
  hubspot: hubspotCheck,
  intercom: intercomCheck,
  launchdarkly: launchDarklyCheck,
  mailchimp: mailchimpCheck,
  mailgun: mailgunCheck,
  pagerduty: pagerdutyCheck,
  sendgrid: sendgridCheck,
  shopify: shopifyCheck,
  slack: slackCheck,
  square: squareCheck,
  stripe: stripeCheck,
  twilio: twilioCheck,
  xero: xeroCheck,
  zendesk: zendeskCheck,
};

/**
 * A verifier for the requests of `provider`. Throws when the configuration cannot work (no secret,
 * or a secret of the wrong form such as a SendGrid key that is not a public key); afterwards every
 * request gets a verdict, never an exception. Reasons name what failed and never contain the
 * secret or the expected signature.
 */
export function createWebhookVerifier(
  provider: WebhookProvider,
  secret: string | null,
  options: WebhookVerifierOptions = {},
): WebhookVerifier {
  const context: ProviderContext = {
    now: options.now ?? Date.now,
    fetchSnsCertificate: options.fetchSnsCertificate ?? fetchSnsCertificate,
  };
  const check = providerCheck(provider, secret, context);
  return async (request: SignedRequest): Promise<WebhookVerdict> => {
    if (request.body.length > MAX_WEBHOOK_BODY_BYTES) {
      return fail(`body larger than ${MAX_WEBHOOK_BODY_BYTES} bytes`);
    }
    try {
      return await check(request);
    } catch (error) {
      // A bug or an input no check foresaw: refuse, and say so rather than pass the request on.
      return fail(`verification failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
}

function providerCheck(
  provider: WebhookProvider,
  secret: string | null,
  context: ProviderContext,
): ProviderCheck {
  if (provider === 'sns') return snsCheck(context);
  const create: SecretCheck | undefined = WITH_SECRET[provider];
  if (create === undefined) throw new Error(`unknown webhook provider ${JSON.stringify(provider)}`);
  if (secret === null || secret === '') throw new Error(`webhook provider '${provider}' needs a secret`);
  return create(secret, context);
}
