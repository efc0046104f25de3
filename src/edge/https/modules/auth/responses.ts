import type { AuthVerdict } from './types.js';

/** Every answer the edge gives itself: never cached, never framed, never leaking the callback URL. */
const COMMON_HEADERS = {
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
} as const;

export function redirect(location: string, setCookies: string[] = []): AuthVerdict {
  const headers: Record<string, string | string[]> = { ...COMMON_HEADERS, location };
  if (setCookies.length > 0) headers['set-cookie'] = setCookies;
  return { kind: 'respond', status: 302, headers, body: '' };
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (char) => ESCAPES[char] ?? char);

/** A small HTML page. Texts are fixed by the caller: nothing from the IdP or the request. */
export function page(status: number, title: string, message: string, setCookies: string[] = []): AuthVerdict {
  const headers: Record<string, string | string[]> = {
    ...COMMON_HEADERS,
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
    'x-frame-options': 'DENY',
  };
  if (setCookies.length > 0) headers['set-cookie'] = setCookies;
  const body = [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<title>${escapeHtml(title)}</title>`,
    '<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem}</style>',
    '</head><body>',
    `<h1>${escapeHtml(title)}</h1>`,
    `<p>${escapeHtml(message)}</p>`,
    '</body></html>',
    '',
  ].join('\n');
  return { kind: 'respond', status, headers, body };
}

/** For requests that cannot follow a redirect to a sign-in page (API calls, subresources). */
export function unauthorized(setCookies: string[] = []): AuthVerdict {
  const headers: Record<string, string | string[]> = {
    ...COMMON_HEADERS,
    'content-type': 'text/plain; charset=utf-8',
  };
  if (setCookies.length > 0) headers['set-cookie'] = setCookies;
  return { kind: 'respond', status: 401, headers, body: 'authentication required\n' };
}

export function methodNotAllowed(methods: string): AuthVerdict {
  const verdict = page(405, 'Method not allowed', `Use ${methods}.`);
  if (verdict.kind === 'respond') verdict.headers.allow = methods;
  return verdict;
}
