import { createServer, type Server } from 'node:https';
import { Agent, request } from 'undici';
import type { AuthModule, AuthRequest } from '../../src/edge/https/modules/auth/index.js';
import { closeServer, type LoopbackTls, listen } from './auth-idp.js';

/**
 * A browser in small for the auth module tests: a cookie jar per host name, redirects followed by
 * hand, and the test IdP's login and consent forms filled in; plus the edge it talks to.
 */

export interface BrowserResponse {
  status: number;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

interface StoredCookie {
  value: string;
  path: string;
}

const PAGE_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

export class Browser {
  readonly #agent: Agent;
  /** host name → cookie name → cookie (ports do not separate cookies, host names do). */
  readonly jar = new Map<string, Map<string, StoredCookie>>();

  constructor(ca: string) {
    this.#agent = new Agent({ connect: { ca } });
  }

  cookie(url: string, name: string): string | undefined {
    return this.jar.get(new URL(url).hostname)?.get(name)?.value;
  }

  setCookie(url: string, name: string, value: string, path = '/'): void {
    const host = new URL(url).hostname;
    const cookies = this.jar.get(host) ?? new Map<string, StoredCookie>();
    cookies.set(name, { value, path });
    this.jar.set(host, cookies);
  }

  #store(url: URL, setCookies: string | string[] | undefined): void {
    for (const line of setCookies === undefined
      ? []
      : Array.isArray(setCookies)
        ? setCookies
        : [setCookies]) {
      const [pair = '', ...attributes] = line.split(';').map((part) => part.trim());
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const path = attributes.find((a) => a.toLowerCase().startsWith('path='))?.slice(5) ?? '/';
      const maxAge = attributes.find((a) => a.toLowerCase().startsWith('max-age='));
      const expires = attributes.find((a) => a.toLowerCase().startsWith('expires='));
      const gone =
        (maxAge !== undefined && Number(maxAge.slice(8)) <= 0) ||
        (expires !== undefined && Date.parse(expires.slice(8)) <= Date.now());
      if (gone) this.jar.get(url.hostname)?.delete(name);
      else this.setCookie(url.href, name, pair.slice(eq + 1), path);
    }
  }

  #cookieHeader(url: URL): string | undefined {
    const cookies = [...(this.jar.get(url.hostname) ?? new Map<string, StoredCookie>()).entries()]
      .filter(([, cookie]) => url.pathname.startsWith(cookie.path))
      .map(([name, cookie]) => `${name}=${cookie.value}`);
    return cookies.length > 0 ? cookies.join('; ') : undefined;
  }

  /** One request, no redirect followed; `form` posts urlencoded fields. */
  async fetch(
    url: string,
    options: { method?: string; accept?: string; form?: Record<string, string> } = {},
  ): Promise<BrowserResponse> {
    const target = new URL(url);
    const headers: Record<string, string> = { accept: options.accept ?? PAGE_ACCEPT };
    const cookie = this.#cookieHeader(target);
    if (cookie) headers.cookie = cookie;
    let body: string | undefined;
    if (options.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(options.form).toString();
    }
    const response = await request(target, {
      method: (options.method ?? (options.form ? 'POST' : 'GET')) as 'GET',
      headers,
      body,
      dispatcher: this.#agent,
    });
    const text = await response.body.text();
    this.#store(target, response.headers['set-cookie']);
    return { status: response.statusCode, url: target.href, headers: response.headers, body: text };
  }

  close(): Promise<void> {
    return this.#agent.close();
  }
}

function formOf(html: string): { action: string; fields: Record<string, string> } | undefined {
  const form = /<form[^>]*action="([^"]+)"[^>]*method="post"[^>]*>([\s\S]*?)<\/form>/i.exec(html);
  if (!form) return undefined;
  const fields: Record<string, string> = {};
  for (const input of (form[2] ?? '').matchAll(/<input[^>]*type="hidden"[^>]*>/gi)) {
    const name = /name="([^"]+)"/.exec(input[0])?.[1];
    const value = /value="([^"]*)"/.exec(input[0])?.[1];
    if (name) fields[name] = value ?? '';
  }
  return { action: (form[1] ?? '').replace(/&amp;/g, '&'), fields };
}

export interface BrowseOptions {
  /** Who signs in at the IdP's login form. */
  login: string;
  /** The IdP's origin: forms elsewhere are not filled in. */
  idp: string;
  /** Press the IdP's cancel link instead of signing in. */
  cancel?: boolean;
  /** Stop before requesting the URL a redirect names when this says so (e.g. the callback). */
  stopAt?: (url: URL) => boolean;
}

/** Like a person at a browser: follow redirects, sign in and consent at the IdP, until a page. */
export async function browse(
  browser: Browser,
  url: string,
  options: BrowseOptions,
): Promise<{ response: BrowserResponse; visited: string[] }> {
  const visited: string[] = [];
  let response = await browser.fetch(url);
  visited.push(url);
  for (let step = 0; step < 30; step++) {
    const location = response.headers.location;
    if (response.status >= 300 && response.status < 400 && typeof location === 'string') {
      const next = new URL(location, response.url);
      if (options.stopAt?.(next)) return { response, visited };
      visited.push(next.href);
      response = await browser.fetch(next.href);
      continue;
    }
    const here = new URL(response.url);
    const form = here.origin === options.idp && response.status === 200 ? formOf(response.body) : undefined;
    if (!form) return { response, visited };
    if (options.cancel) {
      const abort = /href="([^"]*\/abort)"/.exec(response.body)?.[1];
      if (!abort) throw new Error('the IdP page has no cancel link');
      response = await browser.fetch(new URL(abort, here).href);
      continue;
    }
    const fields = { ...form.fields };
    if (fields.prompt === 'login') Object.assign(fields, { login: options.login, password: 'any' });
    response = await browser.fetch(new URL(form.action, here).href, { form: fields });
  }
  throw new Error(`no page after 30 steps: ${visited.join(' → ')}`);
}

/** The edge's part, as the tests need it: auth first, then a protected "upstream" page. */
export interface TestEdge {
  origin: string;
  module: AuthModule | undefined;
  close(): Promise<void>;
}

export async function startTestEdge(tls: LoopbackTls): Promise<TestEdge> {
  const edge: TestEdge = { origin: '', module: undefined, close: async () => {} };
  const server: Server = createServer({ cert: tls.cert, key: tls.key }, async (req, res) => {
    try {
      const authRequest: AuthRequest = {
        method: req.method ?? 'GET',
        url: `https://${req.headers.host}${req.url}`,
        headers: req.headers,
      };
      if (!edge.module) throw new Error('the test set no module');
      const verdict = await edge.module.handle(authRequest);
      if (verdict.kind === 'respond') {
        res.writeHead(verdict.status, verdict.headers).end(verdict.body);
        return;
      }
      const headers: Record<string, string | string[]> = { 'content-type': 'application/json' };
      if (verdict.setCookies.length > 0) headers['set-cookie'] = verdict.setCookies;
      res.writeHead(200, headers).end(JSON.stringify({ upstream: true, identity: verdict.identity ?? null }));
    } catch (error) {
      res.writeHead(500).end(String(error));
    }
  });
  // All interfaces: `localhost` may resolve to ::1 or 127.0.0.1.
  const port = await listen(server);
  edge.origin = `https://localhost:${port}`;
  edge.close = () => closeServer(server);
  return edge;
}
