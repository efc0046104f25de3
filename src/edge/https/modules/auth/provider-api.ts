import { type Configuration, fetchProtectedResource } from 'openid-client';
import type { z } from 'zod';
import { ProviderApiError } from './errors.js';

export interface ApiPage {
  body: unknown;
  /** The `rel="next"` link of a paged list, if any. */
  next?: string;
}

/** A provider's user API, called with the signed-in user's access token. */
export interface ProviderApi {
  get(name: string, url: string, headers?: Record<string, string>): Promise<ApiPage>;
}

function nextLink(link: string | null): string | undefined {
  for (const part of link?.split(',') ?? []) {
    const match = /<([^>]+)>\s*;\s*rel="?next"?/.exec(part);
    if (match?.[1]) return match[1];
  }
  return undefined;
}

export function providerApi(config: Configuration, accessToken: string): ProviderApi {
  return {
    async get(name, url, headers = {}) {
      const response = await fetchProtectedResource(
        config,
        accessToken,
        new URL(url),
        'GET',
        undefined,
        new Headers({ accept: 'application/json', ...headers }),
      );
      if (!response.ok) {
        await response.body?.cancel();
        throw new ProviderApiError(name, response.status);
      }
      return { body: await response.json(), next: nextLink(response.headers.get('link')) };
    },
  };
}

/** Every page of a list, up to `maxPages` (a user in more than a few thousand orgs is not served). */
export async function allPages(
  api: ProviderApi,
  name: string,
  url: string,
  headers: Record<string, string>,
  maxPages = 10,
): Promise<unknown[]> {
  const items: unknown[] = [];
  let next: string | undefined = url;
  for (let pageNumber = 0; next && pageNumber < maxPages; pageNumber++) {
    const page: ApiPage = await api.get(name, next, headers);
    if (!Array.isArray(page.body)) throw new Error(`the provider's ${name} API did not answer a list`);
    items.push(...page.body);
    next = page.next;
  }
  return items;
}

/** A provider's answer read through a schema; a surprise is an error naming the API, not the data. */
export function parseApi<T extends z.ZodType>(schema: T, body: unknown, name: string): z.output<T> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new Error(`the provider's ${name} API answered in an unexpected shape`, { cause: parsed.error });
  }
  return parsed.data;
}
