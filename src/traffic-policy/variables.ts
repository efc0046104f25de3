import { Environment, type ObjectSchema } from '@marcbachmann/cel-js';
import type { HeaderFields, PolicyConnection, PolicyRequest, PolicyResponse } from './types.js';

/**
 * The CEL variables each stage declares, with their types, so that an unknown variable or field
 * and most type errors are refused when the policy is written rather than when traffic arrives.
 */

/** Where a rule runs: an HTTP request, the upstream's response, or a TCP/TLS connection. */
export type Stage = 'inbound' | 'outbound' | 'connection';

const STRING_LISTS = 'map<string, list<string>>';

const REQ: ObjectSchema = {
  method: 'string',
  url: 'string',
  path: 'string',
  query: 'string',
  query_params: STRING_LISTS,
  host: 'string',
  headers: STRING_LISTS,
  user_agent: 'string',
};
const CONN: ObjectSchema = { client_ip: 'string', client_port: 'int', tls: { version: 'string' } };
const RES: ObjectSchema = { status_code: 'int', headers: STRING_LISTS };

const SCHEMAS: Record<Stage, Record<string, ObjectSchema>> = {
  inbound: { req: REQ, conn: CONN },
  outbound: { req: REQ, conn: CONN, res: RES },
  connection: { conn: CONN },
};

/** `conn.tls.version`-style names of a stage's variables, for messages and the docs. */
export function variableNames(stage: Stage): string[] {
  const names = (schema: ObjectSchema, prefix: string): string[] =>
    Object.entries(schema).flatMap(([field, type]) =>
      typeof type === 'string' ? [`${prefix}.${field}`] : names(type, `${prefix}.${field}`),
    );
  return Object.entries(SCHEMAS[stage]).flatMap(([root, schema]) => names(schema, root));
}

const environments = new Map<Stage, Environment>();

/** One environment per stage, built on first use: building one is the expensive part of CEL. */
export function environmentFor(stage: Stage): Environment {
  let env = environments.get(stage);
  if (!env) {
    // Optional types let a rule read a header that may be absent: req.headers[?'x-a'].orValue([]).
    env = new Environment({ enableOptionalTypes: true });
    for (const [name, schema] of Object.entries(SCHEMAS[stage])) env.registerVariable({ name, schema });
    environments.set(stage, env);
  }
  return env;
}

/** What an expression is evaluated against. */
export type Activation = Record<string, unknown>;

/** Lower-case name -> every value, in order; a comma-joined value stays one entry. */
export function headerLists(headers: HeaderFields): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const key = name.toLowerCase();
    const list = out.get(key) ?? [];
    list.push(...(Array.isArray(value) ? value : [value]));
    out.set(key, list);
  }
  return out;
}

function queryLists(query: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [key, value] of new URLSearchParams(query)) out.set(key, [...(out.get(key) ?? []), value]);
  return out;
}

/** The request as `req`; `path` and `query` are those after any rewrite so far. */
export function requestVariables(request: PolicyRequest, target: { path: string; query: string }) {
  const headers = headerLists(request.headers);
  return {
    method: request.method,
    url: request.url,
    path: target.path,
    query: target.query,
    query_params: queryLists(target.query),
    host: request.host,
    headers,
    user_agent: headers.get('user-agent')?.[0] ?? '',
  };
}

export function connectionVariables(connection: PolicyConnection) {
  return {
    client_ip: connection.clientIp,
    // CEL integers are BigInts.
    client_port: BigInt(connection.clientPort),
    tls: { version: connection.tlsVersion ?? '' },
  };
}

export function responseVariables(response: PolicyResponse) {
  return { status_code: BigInt(response.status), headers: headerLists(response.headers) };
}
