import type { Transform } from 'node:stream';
import zlib from 'node:zlib';
import { ROUTE_MODULE_SCHEMAS } from '../../../schemas/route-module-table.js';
import type { HeaderRecord } from './header-rules.js';
import type { EdgeRouteModule, ModuleConfig } from './route-module.js';

export type ContentCoding = 'br' | 'gzip';

/** RFC 9110 12.4.2 qvalue: 0 to 1 with at most three decimals. */
const QVALUE = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;

/**
 * The coding to compress a response with for this Accept-Encoding (RFC 9110 12.5.3), or undefined
 * for none.
 *
 * - q-values weigh the codings; q=0 refuses one. Entries with a malformed q are ignored.
 * - `*` stands for every coding not listed by name; `x-gzip` is an alias of gzip.
 * - br wins over gzip at equal q (smaller output, and every br client also takes gzip).
 * - identity is only preferred when listed by name with a higher q than the best coding
 *   (`gzip;q=0.1, identity` means "rather not"). `identity;q=0` changes nothing here: without an
 *   acceptable coding there is nothing better to send than the identity anyway.
 * - No header, or an empty one, means no compression: the RFC lets a server pick any coding then,
 *   but clients that can decode send the header.
 */
export function negotiateEncoding(acceptEncoding: string | undefined): ContentCoding | undefined {
  if (!acceptEncoding) return undefined;
  const weights = new Map<string, number>();
  for (const element of acceptEncoding.split(',')) {
    const [codingPart, ...params] = element.split(';');
    const coding = codingPart!.trim().toLowerCase();
    if (coding === '') continue;
    let q = 1;
    let valid = true;
    for (const param of params) {
      const [name, value = ''] = param.split('=', 2).map((part) => part.trim());
      if (name!.toLowerCase() !== 'q') continue;
      if (QVALUE.test(value)) q = Number(value);
      else valid = false;
    }
    // The first entry for a coding counts, as with most servers.
    if (valid && !weights.has(coding)) weights.set(coding, q);
  }
  const star = weights.get('*') ?? 0;
  const br = weights.get('br') ?? star;
  const gzip = weights.get('gzip') ?? weights.get('x-gzip') ?? star;
  const [coding, q]: [ContentCoding, number] = br >= gzip ? ['br', br] : ['gzip', gzip];
  if (q <= 0) return undefined;
  const identity = weights.get('identity');
  return identity !== undefined && identity > q ? undefined : coding;
}

/** Types worth compressing besides text/* and the +json/+xml/+yaml suffixes. */
const COMPRESSIBLE_TYPES: ReadonlySet<string> = new Set([
  'application/ecmascript',
  'application/javascript',
  'application/json',
  'application/rtf',
  'application/toml',
  'application/vnd.ms-fontobject',
  'application/wasm',
  'application/x-font-otf',
  'application/x-font-ttf',
  'application/x-javascript',
  'application/x-sh',
  'application/x-www-form-urlencoded',
  'application/x-yaml',
  'application/xml',
  'application/yaml',
  'font/collection',
  'font/otf',
  'font/ttf',
  // Uncompressed bitmaps; other images are compressed formats already.
  'image/bmp',
  'image/vnd.microsoft.icon',
  'image/x-icon',
]);

/**
 * Whether a Content-Type is worth compressing. An allow list, so anything unknown is left alone:
 * most binary formats (images other than SVG/BMP/ICO, audio, video, fonts woff/woff2, zip, gzip,
 * pdf, octet-stream, ...) are compressed already and would only cost CPU. `text/event-stream` is
 * left out so server-sent events are never held in a compressor's buffer.
 */
export function isCompressibleType(contentType: string | undefined): boolean {
  const type = (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase();
  if (!type) return false;
  if (type === 'text/event-stream') return false;
  if (type.startsWith('text/')) return true;
  if (COMPRESSIBLE_TYPES.has(type)) return true;
  return /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+\+(?:json|xml|yaml)$/.test(type);
}

export type CompressionSkipReason =
  /** HEAD, whose response has no body. */
  | 'method'
  /** 1xx, 204, 205, 304: no body; 206: the range is of the identity bytes. */
  | 'status'
  /** A Content-Range (a partial body) is present. */
  | 'content_range'
  /** Already encoded by the upstream. */
  | 'content_encoding'
  /** `Cache-Control: no-transform`: intermediaries must not change the body. */
  | 'no_transform'
  | 'content_type'
  /** Content-Length below the minimum: the framing overhead would eat the gain. */
  | 'too_small'
  /** Compressible, but the client accepts neither br nor gzip. */
  | 'not_accepted';

export interface CompressionContext {
  /** The request's method. */
  method: string;
  statusCode: number;
  /** The request's Accept-Encoding. */
  acceptEncoding: string | undefined;
}

export interface CompressionOptions {
  /** Brotli quality 0-11; default 4, fast with most of the gain. */
  brotliQuality?: number;
  /** Gzip level 1-9; default 6. */
  gzipLevel?: number;
  /** Smallest Content-Length compressed; default 1024. Bodies of unknown length are compressed. */
  minLength?: number;
  /**
   * Flush the compressor after every chunk written (default true), so the client gets each
   * upstream chunk as it comes (streamed JSON, long polls, early-flushed HTML) instead of when the
   * compressor's buffer fills. Costs a few bytes per chunk.
   */
  flushEachChunk?: boolean;
}

export type CompressionDecision =
  | {
      compress: false;
      reason: CompressionSkipReason;
      /** The headers to send: the same record, or for `not_accepted` a copy with Vary added. */
      headers: HeaderRecord;
    }
  | {
      compress: true;
      encoding: ContentCoding;
      /** A copy of the headers with the changes for the encoded body. */
      headers: HeaderRecord;
      /** Pipe the upstream body through this to the client. */
      stream: Transform;
    };

export const DEFAULT_MIN_COMPRESS_LENGTH = 1024;

/**
 * Decides whether to compress a response and, if so, makes the compressor and the new headers.
 *
 * Skipped (in this order): HEAD; status 1xx, 204, 205, 206, 304; a Content-Range; a
 * Content-Encoding other than identity; Cache-Control no-transform; a type `isCompressibleType`
 * refuses (a missing Content-Type included); Content-Length below `minLength`; finally a client
 * that accepts neither br nor gzip (`negotiateEncoding`), which still gets `Vary: Accept-Encoding`
 * since another client would have got the compressed variant.
 *
 * When compressing, the headers change so: Content-Encoding set; Content-Length dropped (the
 * length is no longer known up front); Accept-Ranges dropped (byte ranges of the encoded body are
 * not served); Accept-Encoding merged into Vary (unless it is `*` or lists it already); a strong
 * ETag made weak, since the bytes differ from those the upstream's validator describes.
 */
export function compressResponse(
  headers: HeaderRecord,
  context: CompressionContext,
  options: CompressionOptions = {},
): CompressionDecision {
  const skip = (reason: CompressionSkipReason): CompressionDecision => ({ compress: false, reason, headers });
  const { statusCode } = context;
  if (context.method.toUpperCase() === 'HEAD') return skip('method');
  if (
    statusCode < 200 ||
    statusCode === 204 ||
    statusCode === 205 ||
    statusCode === 206 ||
    statusCode === 304
  ) {
    return skip('status');
  }
  if (header(headers, 'content-range') !== undefined) return skip('content_range');
  const contentEncoding = header(headers, 'content-encoding')?.trim().toLowerCase();
  if (contentEncoding && contentEncoding !== 'identity') return skip('content_encoding');
  if (tokens(header(headers, 'cache-control')).includes('no-transform')) return skip('no_transform');
  if (!isCompressibleType(header(headers, 'content-type'))) return skip('content_type');
  const length = contentLength(headers);
  if (length !== undefined && length < (options.minLength ?? DEFAULT_MIN_COMPRESS_LENGTH)) {
    return skip('too_small');
  }

  const vary = mergeVary(header(headers, 'vary'));
  const encoding = negotiateEncoding(context.acceptEncoding);
  if (encoding === undefined) {
    return { compress: false, reason: 'not_accepted', headers: withHeaders(headers, { vary }) };
  }

  const etag = header(headers, 'etag');
  return {
    compress: true,
    encoding,
    headers: withHeaders(headers, {
      'content-encoding': encoding,
      'content-length': undefined,
      'accept-ranges': undefined,
      vary,
      etag: etag === undefined || etag.startsWith('W/') ? etag : `W/${etag}`,
    }),
    stream: compressor(encoding, length, options),
  };
}

function compressor(
  encoding: ContentCoding,
  length: number | undefined,
  options: CompressionOptions,
): Transform {
  const { constants } = zlib;
  const flushEachChunk = options.flushEachChunk ?? true;
  if (encoding === 'br') {
    return zlib.createBrotliCompress({
      ...(flushEachChunk ? { flush: constants.BROTLI_OPERATION_FLUSH } : {}),
      params: {
        [constants.BROTLI_PARAM_QUALITY]: options.brotliQuality ?? 4,
        // Lets brotli size its window to the body instead of the 4 MiB default.
        ...(length !== undefined ? { [constants.BROTLI_PARAM_SIZE_HINT]: length } : {}),
      },
    });
  }
  return zlib.createGzip({
    level: options.gzipLevel ?? 6,
    ...(flushEachChunk ? { flush: constants.Z_SYNC_FLUSH } : {}),
  });
}

/** A header's value, case-insensitively; a list is joined as RFC 9110 5.3 allows. */
function header(headers: HeaderRecord, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (value !== undefined && key.toLowerCase() === name)
      return Array.isArray(value) ? value.join(', ') : value;
  }
  return undefined;
}

function tokens(value: string | undefined): string[] {
  return (value ?? '').split(',').map((token) => token.trim().toLowerCase());
}

function contentLength(headers: HeaderRecord): number | undefined {
  const value = header(headers, 'content-length')?.trim();
  return value && /^\d+$/.test(value) ? Number(value) : undefined;
}

function mergeVary(vary: string | undefined): string {
  if (!vary?.trim()) return 'Accept-Encoding';
  const listed = tokens(vary);
  return listed.includes('*') || listed.includes('accept-encoding') ? vary : `${vary}, Accept-Encoding`;
}

/** A copy with `changes` applied (undefined deletes); every spelling of a changed name is replaced. */
function withHeaders(headers: HeaderRecord, changes: Record<string, string | undefined>): HeaderRecord {
  const result: HeaderRecord = Object.create(null);
  for (const [name, value] of Object.entries(headers)) {
    if (!Object.hasOwn(changes, name.toLowerCase())) result[name] = value;
  }
  for (const [name, value] of Object.entries(changes)) {
    if (value !== undefined) result[name] = value;
  }
  return result;
}

/** `compression`: br or gzip by the client's Accept-Encoding, for what `compressResponse` allows. */
export const compressionModule: EdgeRouteModule<ModuleConfig<'compression'>> = {
  schema: ROUTE_MODULE_SCHEMAS.compression.input,
  compile() {
    return {
      onResponse(response) {
        const { request } = response.admitted;
        const decision = compressResponse(response.headers, {
          method: request.method,
          statusCode: response.status,
          acceptEncoding: header(request.headers, 'accept-encoding'),
        });
        response.headers = decision.headers;
        if (decision.compress) response.transform = decision.stream;
        return undefined;
      },
    };
  },
};
