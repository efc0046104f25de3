import { newId } from '../../crypto/ids.js';
import type { RequestContext } from '../http/context.js';

/** The columns shared by resources with a description and metadata (see `describedResourceFields`). */
interface DescribedRow {
  id: string;
  created_at: string;
  description: string;
  metadata: string;
}

/** A new row's id and creation time, with the body's description and metadata ('' when omitted). */
export function newDescribedRow(
  prefix: string,
  body: { description?: string; metadata?: string },
  ctx: RequestContext,
): DescribedRow {
  return {
    id: newId(prefix),
    created_at: ctx.now(),
    description: body.description ?? '',
    metadata: body.metadata ?? '',
  };
}

/** The leading `id, uri, created_at, description, metadata` of the read form of a row under `path`. */
export function describedToWire(row: DescribedRow, ctx: RequestContext, path: string) {
  return {
    id: row.id,
    uri: ctx.url(`${path}/${row.id}`),
    created_at: row.created_at,
    description: row.description,
    metadata: row.metadata,
  };
}
