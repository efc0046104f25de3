/**
 * The pages the edge answers with itself. They name the edge and what went wrong for the person
 * reading them, never a secret, an upstream address or an internal error message.
 */

export interface EdgePage {
  status: number;
  /** Short machine-readable cause, also sent as the `edgeward-error` header. */
  code: string;
  title: string;
  detail: string;
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function renderPage(
  page: EdgePage,
  edgeId: string | undefined,
): { headers: Record<string, string>; body: string } {
  const edge = edgeId ? `<p class="edge">edgeward edge <code>${escapeHtml(edgeId)}</code></p>` : '';
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${page.status} ${escapeHtml(page.title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#222}code{background:#eee;padding:0 .2em}.edge{color:#666}</style></head>
<body><h1>${page.status} ${escapeHtml(page.title)}</h1><p>${escapeHtml(page.detail)}</p>${edge}</body></html>
`;
  return {
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'edgeward-error': page.code,
    },
    body,
  };
}

export const Pages = {
  noEdge: (host: string): EdgePage => ({
    status: 404,
    code: 'no-edge',
    title: 'Not Found',
    detail: `No HTTPS edge serves ${host}.`,
  }),
  misdirected: (host: string): EdgePage => ({
    status: 421,
    code: 'misdirected',
    title: 'Misdirected Request',
    detail: `This connection was opened for another name than ${host}; open a new one for it.`,
  }),
  badRequest: (why: string): EdgePage => ({
    status: 400,
    code: 'bad-request',
    title: 'Bad Request',
    detail: `The edge cannot route this request: ${why}.`,
  }),
  tooManyHeaders: (limit: number): EdgePage => ({
    status: 431,
    code: 'too-many-headers',
    title: 'Request Header Fields Too Large',
    detail: `The request carries more than ${limit} header fields.`,
  }),
  requestTimeout: (): EdgePage => ({
    status: 408,
    code: 'request-timeout',
    title: 'Request Timeout',
    detail: 'The request did not arrive whole in time.',
  }),
  noRoute: (path: string): EdgePage => ({
    status: 404,
    code: 'no-route',
    title: 'Not Found',
    detail: `No route of this edge matches ${path}.`,
  }),
  noBackend: (): EdgePage => ({
    status: 503,
    code: 'no-backend',
    title: 'Service Unavailable',
    detail: 'This route has no backend to send the request to.',
  }),
  noSession: (): EdgePage => ({
    status: 502,
    code: 'no-session',
    title: 'Bad Gateway',
    detail: 'No agent of this route’s backend is online, or none could reach its service.',
  }),
  upstreamFailed: (): EdgePage => ({
    status: 502,
    code: 'upstream-failed',
    title: 'Bad Gateway',
    detail: 'The service behind this route did not answer properly.',
  }),
  misconfigured: (): EdgePage => ({
    status: 503,
    code: 'route-misconfigured',
    title: 'Service Unavailable',
    detail:
      'This route’s configuration could not be read by the edge, so it serves no requests until it is fixed.',
  }),
  circuitOpen: (): EdgePage => ({
    status: 503,
    code: 'circuit-open',
    title: 'Service Unavailable',
    detail: 'The service behind this route is failing; requests are held back for a while.',
  }),
  ipDenied: (): EdgePage => ({
    status: 403,
    code: 'ip-denied',
    title: 'Forbidden',
    detail: 'Requests from your address are not allowed on this route.',
  }),
  userAgentDenied: (): EdgePage => ({
    status: 403,
    code: 'user-agent-denied',
    title: 'Forbidden',
    detail: 'Requests from this client software are not allowed on this route.',
  }),
  webhookRefused: (): EdgePage => ({
    status: 403,
    code: 'webhook-signature',
    title: 'Forbidden',
    detail: 'The webhook signature could not be verified.',
  }),
  tooLarge: (limit: number): EdgePage => ({
    status: 413,
    code: 'body-too-large',
    title: 'Content Too Large',
    detail: `A webhook body of more than ${limit} bytes cannot be verified.`,
  }),
  samlNotBuilt: (): EdgePage => ({
    status: 501,
    code: 'saml-not-built',
    title: 'Not Implemented',
    detail:
      'This route requires SAML sign-in, which this edge does not perform yet; no request passes unauthenticated.',
  }),
  notWebSocket: (): EdgePage => ({
    status: 426,
    code: 'websocket-required',
    title: 'Upgrade Required',
    detail: 'This route carries WebSocket connections only.',
  }),
};
