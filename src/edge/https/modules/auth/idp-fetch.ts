import { rootCertificates } from 'node:tls';
import type { CustomFetch } from 'openid-client';
import { Agent, fetch } from 'undici';

/** Seconds an identity provider may take to answer one request. */
export const IDP_TIMEOUT_SECONDS = 10;

const USER_AGENT = 'edgeward-edge-auth';

/**
 * The fetch openid-client uses for every call to the identity provider. Extra CAs are added to the
 * system's roots (a TLS `ca` option replaces them), so a test IdP and public ones both verify.
 */
export function idpFetch(ca: readonly string[] | undefined): CustomFetch {
  const dispatcher =
    ca && ca.length > 0 ? new Agent({ connect: { ca: [...rootCertificates, ...ca] } }) : undefined;
  return async (url, options) => {
    // undici's Response is the Fetch API's; openid-client recognises it by its tag.
    const response = await fetch(url, {
      ...options,
      headers: { 'user-agent': USER_AGENT, ...options.headers },
      ...(dispatcher ? { dispatcher } : {}),
    });
    return response as unknown as Response;
  };
}
