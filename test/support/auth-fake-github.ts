import { createServer } from 'node:https';
import { Agent, request } from 'undici';
import { closeServer, type LoopbackTls, listen, type TestIdp } from './auth-idp.js';

/**
 * GitHub's user API (`/user`, `/user/emails`, `/user/orgs`, `/user/teams`) in the shapes GitHub
 * answers, for users of the test IdP: a bearer token is checked by introspecting it at the IdP, so
 * only tokens the edge really obtained work. Lists come one item per page, linked by `Link`
 * headers, to exercise paging.
 */

export interface FakeGithubUser {
  id: number;
  login: string;
  name: string | null;
  emails: { email: string; primary: boolean; verified: boolean }[];
  orgs: string[];
  /** `org/team-slug`. */
  teams: string[];
}

export interface FakeGithub {
  /** The `/user` URL, the `userinfoUrl` of the endpoint override. */
  userUrl: string;
  /** By the IdP's account id; tests change memberships in place. */
  users: Record<string, FakeGithubUser>;
  requests: string[];
  close(): Promise<void>;
}

export async function startFakeGithub(
  tls: LoopbackTls,
  idp: TestIdp,
  users: Record<string, FakeGithubUser>,
): Promise<FakeGithub> {
  const agent = new Agent({ connect: { ca: tls.cert } });
  const requests: string[] = [];

  async function subjectOf(authorization: string | undefined): Promise<string | undefined> {
    const token = /^Bearer (.+)$/i.exec(authorization ?? '')?.[1];
    if (!token) return undefined;
    const response = await request(idp.endpoints.introspection, {
      method: 'POST',
      dispatcher: agent,
      headers: {
        authorization: `Basic ${Buffer.from(`${idp.clientId}:${idp.clientSecret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ token }).toString(),
    });
    const body = (await response.body.json()) as { active?: boolean; sub?: string };
    return body.active ? body.sub : undefined;
  }

  const server = createServer({ cert: tls.cert, key: tls.key }, async (req, res) => {
    const url = new URL(req.url ?? '/', `https://${req.headers.host}`);
    requests.push(`${req.method} ${url.pathname}`);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
    const subject = await subjectOf(req.headers.authorization);
    const user = subject === undefined ? undefined : users[subject];
    if (!user) return send(401, { message: 'Bad credentials' });

    const paged = (items: unknown[]) => {
      const page = Number(url.searchParams.get('page') ?? '1');
      const headers: Record<string, string> = {};
      if (page < items.length) {
        const next = new URL(url);
        next.searchParams.set('page', String(page + 1));
        headers.link = `<${next.href}>; rel="next", <${url.origin}${url.pathname}?page=1>; rel="first"`;
      }
      send(200, items.slice(page - 1, page), headers);
    };
    switch (url.pathname) {
      case '/user':
        return send(200, { id: user.id, login: user.login, name: user.name, email: null });
      case '/user/emails':
        return paged(user.emails);
      case '/user/orgs':
        return paged(user.orgs.map((login) => ({ login })));
      case '/user/teams':
        return paged(
          user.teams.map((team) => {
            const [org = '', slug = ''] = team.split('/');
            return { slug, organization: { login: org } };
          }),
        );
      default:
        return send(404, { message: 'Not Found' });
    }
  });
  const port = await listen(server, '127.0.0.1');
  return {
    userUrl: `https://127.0.0.1:${port}/user`,
    users,
    requests,
    async close() {
      await closeServer(server);
      await agent.close();
    },
  };
}
