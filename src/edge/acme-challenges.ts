import type { AcmeChallenge, EdgeConfig } from '../schemas/edge-config.js';

type Certificate = { cert: string; key: string };
type AcmeModule = typeof import('acme-client');

/**
 * The ACME challenges pending in the account, as every edge answers them: HTTP-01 by token on the
 * plain-HTTP listener, TLS-ALPN-01 by name on the TLS listener, with a self-signed certificate
 * carrying the key authorization's digest (RFC 8737 §3), made once per challenge.
 */
export class AcmeChallenges {
  #byToken = new Map<string, AcmeChallenge>();
  #alpnByDomain = new Map<string, AcmeChallenge>();
  readonly #certificates = new Map<string, Promise<Certificate>>();

  apply(config: EdgeConfig): void {
    this.#byToken = new Map(config.acme_challenges.map((challenge) => [challenge.token, challenge]));
    this.#alpnByDomain = new Map(
      config.acme_challenges
        .filter((challenge) => challenge.type === 'tls-alpn-01')
        .map((challenge) => [challenge.domain.toLowerCase(), challenge]),
    );
    for (const token of this.#certificates.keys())
      if (!this.#byToken.has(token)) this.#certificates.delete(token);
  }

  /** The key authorization to answer `GET /.well-known/acme-challenge/<token>` with. */
  httpAnswer(token: string): string | undefined {
    const challenge = this.#byToken.get(token);
    return challenge?.type === 'http-01' ? challenge.key_authorization : undefined;
  }

  /** The TLS-ALPN-01 certificate for `serverName`, when a challenge for it is pending. */
  alpnCertificate(serverName: string): Promise<Certificate> | undefined {
    const challenge = this.#alpnByDomain.get(serverName.toLowerCase());
    if (!challenge) return undefined;
    let certificate = this.#certificates.get(challenge.token);
    if (!certificate) {
      certificate = makeAlpnCertificate(challenge);
      // A failure is not kept: the CA's next attempt tries again.
      certificate.catch(() => this.#certificates.delete(challenge.token));
      this.#certificates.set(challenge.token, certificate);
    }
    return certificate;
  }
}

let acmeLibrary: Promise<AcmeModule> | undefined;

async function makeAlpnCertificate(challenge: AcmeChallenge): Promise<Certificate> {
  acmeLibrary ??= import('acme-client').then(
    (module) => (module as unknown as { default?: AcmeModule }).default ?? module,
  );
  const acme = await acmeLibrary;
  const key = await acme.crypto.createPrivateEcdsaKey('P-256');
  const authorization = { identifier: { type: 'dns', value: challenge.domain } } as Parameters<
    AcmeModule['crypto']['createAlpnCertificate']
  >[0];
  const [, cert] = await acme.crypto.createAlpnCertificate(authorization, challenge.key_authorization, key);
  return { cert: cert.toString(), key: key.toString() };
}
