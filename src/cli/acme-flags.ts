import { readFileSync } from 'node:fs';
import { type Flags, secondsFlag } from '../lib/flags.js';
import {
  ACME_DEFAULTS,
  type AcmeSettings,
  CHALLENGE_TYPES,
  type ChallengeType,
} from '../server/acme/acme-settings.js';
import { UsageError } from './command.js';

/** `edgeward server --acme-*`: certificates for the edges' names from an ACME CA. */
export const ACME_FLAGS = {
  'acme-directory-url': {
    type: 'string',
    value: 'URL',
    help: "an ACME CA's directory (e.g. https://acme-v02.api.letsencrypt.org/directory): edges' names get certificates from it; default none (self-signed)",
  },
  'acme-email': { type: 'string', value: 'ADDR', help: "the ACME account's contact (the CA's expiry mail)" },
  'acme-ca-bundle': {
    type: 'string',
    value: 'FILE',
    help: "PEM of the CA the directory's HTTPS chains to, for a private ACME server",
  },
  'acme-domains': {
    type: 'string',
    value: 'LIST',
    help: 'only names in these domains (each one and the names under it) get certificates for edges; default every name (agent ingresses ask for theirs)',
  },
  'acme-challenges': {
    type: 'string',
    value: 'LIST',
    default: ACME_DEFAULTS.challenges.join(','),
    help: 'challenge types edges answer, preferred first: tls-alpn-01 (the TLS listener) and http-01 (edges need --http-addr on port 80)',
  },
  'acme-retry-min': {
    type: 'string',
    value: 'S',
    default: String(ACME_DEFAULTS.retryMinMs / 1000),
    help: "seconds before the first retry of a failed order; doubled per failure up to a day, never before the CA's Retry-After",
  },
} as const satisfies Flags;

const DOMAIN = /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/;

type AcmeFlagValues = { [name in keyof typeof ACME_FLAGS]?: string | undefined };

/** The settings the flags ask for, or undefined when ACME is off. */
export function acmeSettingsOf(values: AcmeFlagValues): AcmeSettings | undefined {
  const directoryUrl = values['acme-directory-url'];
  if (directoryUrl === undefined) {
    for (const name of ['acme-email', 'acme-ca-bundle', 'acme-domains'] as const)
      if (values[name] !== undefined) throw new UsageError(`--${name} needs --acme-directory-url`);
    return undefined;
  }
  if (!/^https?:\/\//.test(directoryUrl))
    throw new UsageError(`--acme-directory-url: '${directoryUrl}' is not an http(s) URL`);
  const email = values['acme-email'];
  if (!email || !/^[^@\s]+@[^@\s]+$/.test(email))
    throw new UsageError(
      '--acme-email: an ACME account needs a contact address (the CA mails expiry warnings there)',
    );
  const challenges = (values['acme-challenges'] ?? ACME_DEFAULTS.challenges.join(','))
    .split(',')
    .map((type) => type.trim())
    .filter(Boolean);
  const unknown = challenges.filter((type) => !CHALLENGE_TYPES.includes(type as ChallengeType));
  if (challenges.length === 0 || unknown.length > 0)
    throw new UsageError(
      `--acme-challenges: '${values['acme-challenges']}' is not a list of ${CHALLENGE_TYPES.join(', ')}`,
    );
  const bundleFile = values['acme-ca-bundle'];
  let caBundlePem: string | undefined;
  if (bundleFile !== undefined) {
    try {
      caBundlePem = readFileSync(bundleFile, 'utf8');
    } catch (cause) {
      throw new UsageError(`--acme-ca-bundle: cannot read ${bundleFile}`, { cause });
    }
    if (!caBundlePem.includes('-----BEGIN CERTIFICATE-----'))
      throw new UsageError(`--acme-ca-bundle: ${bundleFile} holds no PEM certificate`);
  }
  let retryMinMs: number;
  try {
    retryMinMs = secondsFlag(
      (name) => values[name as keyof AcmeFlagValues],
      '',
      'acme-retry-min',
      ACME_DEFAULTS.retryMinMs,
      86_400,
    );
  } catch (error) {
    throw new UsageError((error as Error).message, { cause: error });
  }
  const domains = (values['acme-domains'] ?? '')
    .split(',')
    .map((domain) =>
      domain
        .trim()
        .toLowerCase()
        .replace(/^\*?\./, ''),
    )
    .filter(Boolean);
  const badDomain = domains.find((domain) => !DOMAIN.test(domain));
  if (badDomain !== undefined) throw new UsageError(`--acme-domains: '${badDomain}' is not a domain name`);
  return {
    ...ACME_DEFAULTS,
    directoryUrl,
    email,
    caBundlePem,
    domains,
    challenges: challenges as ChallengeType[],
    retryMinMs,
  };
}
