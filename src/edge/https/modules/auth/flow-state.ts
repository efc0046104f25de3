import { z } from 'zod';

/** What the edge must remember between the redirect to the IdP and the callback: a sealed cookie. */
export const flowPayload = z.object({
  v: z.literal(1),
  state: z.string().min(1),
  nonce: z.string().optional(),
  verifier: z.string().min(1),
  /** The URL to go back to after signing in. */
  ret: z.string(),
  /** Seconds since the epoch after which the callback is refused. */
  exp: z.number().int(),
});
export type FlowState = z.infer<typeof flowPayload>;

/** Ten minutes to sign in at the IdP. */
export const FLOW_LIFETIME_SECONDS = 600;

/** Long enough for real URLs, short enough that the flow cookie stays well under 4 KB. */
const MAX_RETURN_URL = 2048;

/** The URL to return to, shortened so the cookie carrying it fits: first without its query. */
export function returnUrlFor(url: URL): string {
  if (url.href.length <= MAX_RETURN_URL) return url.href;
  const withoutQuery = `${url.origin}${url.pathname}`;
  return withoutQuery.length <= MAX_RETURN_URL ? withoutQuery : `${url.origin}/`;
}
