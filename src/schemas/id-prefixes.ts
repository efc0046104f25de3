/**
 * The id prefix of each collection, keyed by the collection's path (Fastify syntax). An id is the
 * prefix, `_` and a 27-character base62 string; the server makes new ids with it, the OpenAPI
 * document states it for every path parameter and referenced id, and a test fails when a
 * collection is missing here.
 */
const PREFIX_OF_COLLECTION = {
  '/agent_ingresses': 'agin',
  '/ssh_certificate_authorities': 'sshca',
  '/ssh_host_certificates': 'shcrt',
  '/ssh_user_certificates': 'sucrt',
  '/ssh_credentials': 'sshcr',
  '/credentials': 'cr',
  '/tunnel_sessions': 'ts',
  '/backends/tunnel_group': 'bkdtg',
  '/ip_policies': 'ipp',
  '/ip_policy_rules': 'ipr',
  '/reserved_addrs': 'ra',
  '/bot_users': 'bot',
  '/api_keys': 'ak',
  '/certificate_authorities': 'ca',
  '/tls_certificates': 'cert',
  '/event_subscriptions': 'esb',
  '/event_destinations': 'ed',
  '/edges/tls': 'edgtls',
  '/edges/https': 'edghts',
  '/edges/https/:edge_id/routes': 'edghtsrt',
  '/edges/tcp': 'edgtcp',
} as const;

/** The path of a collection that has an id prefix, e.g. `/ip_policies`. */
export type CollectionPath = keyof typeof PREFIX_OF_COLLECTION;

/** Every prefix, to be looked up by any path (the OpenAPI document tries each path parameter). */
export const ID_PREFIXES: Readonly<Record<string, string>> = PREFIX_OF_COLLECTION;

/** The id prefix of the collection at `path`: checked when compiled, so a server path cannot lack one. */
export function idPrefixOf(path: CollectionPath): string {
  return PREFIX_OF_COLLECTION[path];
}

/** Length of the part after `<prefix>_`. */
export const ID_SUFFIX_LENGTH = 27;

/** The JSON Schema pattern of an id of `prefix`. */
export function idPattern(prefix: string): string {
  return `^${prefix}_[0-9A-Za-z]{${ID_SUFFIX_LENGTH}}$`;
}

/** Whether `id` names an item of the collection at `path`: it starts with that collection's `<prefix>_`. */
export function isIdOf(path: CollectionPath, id: string): boolean {
  return id.startsWith(`${idPrefixOf(path)}_`);
}
