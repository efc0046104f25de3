import { LABEL_NAME, METADATA_MAX_LENGTH } from '../schemas/tunnel-protocol.js';

/** Agents hold sessions on up to this many edges unless told otherwise (`--ha-connections`). */
export const DEFAULT_HA_CONNECTIONS = 4;

/** `host:port` (IPv6 in brackets) of the edge's tunnel endpoint. */
export function parseEdgeAddr(address: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(address);
  const host = match?.[1] ?? match?.[2];
  const port = Number(match?.[3]);
  if (!host || !Number.isInteger(port) || port < 1 || port > 65535)
    throw new Error(`--edge-addr: '${address}' is not host:port`);
  return { host, port };
}

/** `key=value` labels, at least one, each name as the edge accepts them. */
export function parseLabels(texts: readonly string[]): Record<string, string> {
  if (texts.length === 0) throw new Error('--label: at least one key=value label is required');
  if (texts.length > 64) throw new Error(`--label: at most 64 labels, not ${texts.length}`);
  const labels: Record<string, string> = {};
  for (const text of texts) {
    const eq = text.indexOf('=');
    const key = eq < 0 ? text : text.slice(0, eq);
    if (eq < 0 || !LABEL_NAME.test(key))
      throw new Error(`--label: '${text}' is not key=value with a key of letters, digits, _ . - /`);
    if (key in labels) throw new Error(`--label: '${key}' is given twice`);
    const value = text.slice(eq + 1);
    if (value.length > 255) throw new Error(`--label: the value of '${key}' is longer than 255 characters`);
    labels[key] = value;
  }
  return labels;
}

export function checkMetadata(text: string): string {
  if (text.length > METADATA_MAX_LENGTH)
    throw new Error(`--metadata: at most ${METADATA_MAX_LENGTH} characters, not ${text.length}`);
  return text;
}
