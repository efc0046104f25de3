/** Cookie parsing and Set-Cookie values for the auth modules' own cookies. */

/** The cookies a request carries; HTTP/2 clients may split them over several `cookie` headers. */
export function readCookies(header: string | string[] | undefined): Map<string, string> {
  const cookies = new Map<string, string>();
  const lines = header === undefined ? [] : Array.isArray(header) ? header : [header];
  for (const line of lines) {
    for (const pair of line.split(';')) {
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      const name = pair.slice(0, eq).trim();
      // The first of duplicate names wins: browsers send the most specific path first.
      if (!cookies.has(name)) cookies.set(name, pair.slice(eq + 1).trim());
    }
  }
  return cookies;
}

export interface CookieAttributes {
  path: string;
  /** Seconds; absent for a cookie that lasts as long as the browser session. */
  maxAge?: number;
}

/** Always HttpOnly, Secure and SameSite=Lax: Lax still sends it on the IdP's top-level redirect back. */
export function setCookie(name: string, value: string, attributes: CookieAttributes): string {
  const parts = [`${name}=${value}`, `Path=${attributes.path}`];
  if (attributes.maxAge !== undefined) parts.push(`Max-Age=${Math.max(0, Math.floor(attributes.maxAge))}`);
  parts.push('HttpOnly', 'Secure', 'SameSite=Lax');
  return parts.join('; ');
}

export function clearCookie(name: string, path: string): string {
  return setCookie(name, '', { path, maxAge: 0 });
}
