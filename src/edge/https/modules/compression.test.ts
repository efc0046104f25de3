import { once } from 'node:events';
import { Readable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  type CompressionContext,
  compressResponse,
  DEFAULT_MIN_COMPRESS_LENGTH,
  isCompressibleType,
  negotiateEncoding,
} from './compression.js';
import type { HeaderRecord } from './header-rules.js';

const GET: CompressionContext = { method: 'GET', statusCode: 200, acceptEncoding: 'gzip, deflate, br, zstd' };
const HTML = { 'content-type': 'text/html; charset=utf-8' };

async function collect(stream: Transform, body: Buffer[]): Promise<Buffer> {
  const chunks: Buffer[] = [];
  await pipeline(Readable.from(body), stream, async (encoded: AsyncIterable<Buffer>) => {
    for await (const chunk of encoded) chunks.push(chunk);
  });
  return Buffer.concat(chunks);
}

function decision(headers: HeaderRecord, context: Partial<CompressionContext> = {}) {
  return compressResponse(headers, { ...GET, ...context });
}

describe('negotiateEncoding', () => {
  const table: Array<[string | undefined, 'br' | 'gzip' | undefined]> = [
    [undefined, undefined],
    ['', undefined],
    ['  ,  ', undefined],
    ['gzip', 'gzip'],
    ['br', 'br'],
    ['gzip, br', 'br'],
    ['br, gzip', 'br'],
    ['gzip, deflate, br, zstd', 'br'],
    ['GZIP', 'gzip'],
    ['Br', 'br'],
    ['x-gzip', 'gzip'],
    ['deflate', undefined],
    ['zstd, deflate', undefined],
    ['br;q=0.5, gzip', 'gzip'],
    ['br;q=0.5, gzip;q=0.5', 'br'],
    ['gzip ; q=0.8 , br ; Q=0.9', 'br'],
    ['br;q=0, gzip;q=0', undefined],
    ['br;q=0, gzip', 'gzip'],
    ['br;q=0.000, gzip;q=0.001', 'gzip'],
    ['*', 'br'],
    ['*;q=0', undefined],
    ['*, br;q=0', 'gzip'],
    ['*;q=0.5, gzip', 'gzip'],
    ['identity', undefined],
    ['identity;q=0', undefined],
    ['identity;q=0, *', 'br'],
    ['identity;q=0, *;q=0', undefined],
    ['identity;q=0, gzip', 'gzip'],
    ['gzip;q=0.1, identity;q=0.5', undefined],
    ['gzip;q=0.5, identity;q=0.5', 'gzip'],
    ['gzip;q=0.5', 'gzip'],
    // Malformed q: the entry is ignored.
    ['gzip;q=1.5', undefined],
    ['gzip;q=abc', undefined],
    ['gzip;q=', undefined],
    ['br;q=0.0001, gzip', 'gzip'],
    ['gzip;q=1.000', 'gzip'],
    // Other parameters do not matter; the first entry of a coding counts.
    ['gzip;level=1', 'gzip'],
    ['br;q=0, br', undefined],
  ];
  for (const [header, expected] of table) {
    it(`${JSON.stringify(header)} -> ${String(expected)}`, () => {
      expect(negotiateEncoding(header)).toBe(expected);
    });
  }
});

describe('isCompressibleType', () => {
  it('takes text, json, javascript, xml, svg, wasm and their kin', () => {
    for (const type of [
      'text/html',
      'text/plain; charset=utf-8',
      'TEXT/CSS',
      'text/csv',
      'text/javascript',
      'application/json',
      'application/problem+json',
      'application/ld+json',
      'application/javascript',
      'application/xml',
      'application/atom+xml',
      'application/xhtml+xml',
      'image/svg+xml',
      'application/wasm',
      'application/yaml',
      'font/ttf',
      'image/x-icon',
    ]) {
      expect([type, isCompressibleType(type)]).toEqual([type, true]);
    }
  });

  it('leaves compressed, unknown and streaming types alone', () => {
    for (const type of [
      undefined,
      '',
      'image/png',
      'image/jpeg',
      'image/webp',
      'image/avif',
      'image/gif',
      'video/mp4',
      'audio/mpeg',
      'application/zip',
      'application/gzip',
      'application/x-gzip',
      'application/x-7z-compressed',
      'application/epub+zip',
      'application/pdf',
      'application/octet-stream',
      'font/woff2',
      'multipart/byteranges; boundary=x',
      'text/event-stream',
      'application/grpc',
    ]) {
      expect([type, isCompressibleType(type)]).toEqual([type, false]);
    }
  });
});

describe('compressResponse', () => {
  it('compresses with brotli, and the body survives the round trip', async () => {
    const body = Buffer.from('<p>hello, edge</p>\n'.repeat(2_000));
    const result = decision({ ...HTML, 'content-length': String(body.length) });
    expect(result.compress).toBe(true);
    if (!result.compress) return;
    expect(result.encoding).toBe('br');
    const encoded = await collect(result.stream, [body.subarray(0, 1000), body.subarray(1000)]);
    expect(encoded.length).toBeLessThan(body.length / 10);
    expect(zlib.brotliDecompressSync(encoded).equals(body)).toBe(true);
  });

  it('compresses with gzip when that is what the client takes, and the body survives', async () => {
    const body = Buffer.from(
      JSON.stringify(Array.from({ length: 500 }, (_, id) => ({ id, name: `item ${id}` }))),
    );
    const result = decision({ 'content-type': 'application/json' }, { acceptEncoding: 'gzip' });
    expect(result.compress).toBe(true);
    if (!result.compress) return;
    expect(result.encoding).toBe('gzip');
    const encoded = await collect(result.stream, [body]);
    expect(encoded.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    expect(zlib.gunzipSync(encoded).equals(body)).toBe(true);
  });

  it('round-trips an empty body of unknown length', async () => {
    for (const acceptEncoding of ['br', 'gzip']) {
      const result = decision(HTML, { acceptEncoding });
      if (!result.compress) throw new Error('expected compression');
      const encoded = await collect(result.stream, []);
      const decoded = acceptEncoding === 'br' ? zlib.brotliDecompressSync(encoded) : zlib.gunzipSync(encoded);
      expect(decoded.length).toBe(0);
    }
  });

  it('passes each chunk on as it is written (flushes per chunk)', async () => {
    for (const acceptEncoding of ['br', 'gzip']) {
      const result = decision({ 'content-type': 'application/x-ndjson+json' }, { acceptEncoding });
      if (!result.compress) throw new Error('expected compression');
      const decoder = acceptEncoding === 'br' ? zlib.createBrotliDecompress() : zlib.createGunzip();
      result.stream.pipe(decoder);
      result.stream.write('{"event":1}\n');
      const [first] = (await once(decoder, 'data')) as [Buffer];
      expect(first.toString()).toBe('{"event":1}\n');
      result.stream.write('{"event":2}\n');
      const [second] = (await once(decoder, 'data')) as [Buffer];
      expect(second.toString()).toBe('{"event":2}\n');
      result.stream.end();
      await once(decoder, 'end');
    }
  });

  it('honours the level options (and flushEachChunk: false)', async () => {
    const body = Buffer.from('abcdefghij'.repeat(5_000));
    const fast = compressResponse(
      HTML,
      { ...GET, acceptEncoding: 'gzip' },
      { gzipLevel: 1, flushEachChunk: false },
    );
    const best = compressResponse(
      HTML,
      { ...GET, acceptEncoding: 'gzip' },
      { gzipLevel: 9, flushEachChunk: false },
    );
    if (!fast.compress || !best.compress) throw new Error('expected compression');
    const [a, b] = await Promise.all([collect(fast.stream, [body]), collect(best.stream, [body])]);
    expect(zlib.gunzipSync(a).equals(body)).toBe(true);
    expect(zlib.gunzipSync(b).equals(body)).toBe(true);
    expect(b.length).toBeLessThanOrEqual(a.length);
    const br = compressResponse(HTML, { ...GET, acceptEncoding: 'br' }, { brotliQuality: 11 });
    if (!br.compress) throw new Error('expected compression');
    expect(zlib.brotliDecompressSync(await collect(br.stream, [body])).equals(body)).toBe(true);
  });

  describe('header changes', () => {
    it('sets Content-Encoding, drops Content-Length and Accept-Ranges, adds Vary, weakens the ETag', () => {
      const result = decision({
        ...HTML,
        'Content-Length': '5000',
        'accept-ranges': 'bytes',
        ETag: '"abc123"',
        'cache-control': 'public, max-age=60',
      });
      expect(result.compress).toBe(true);
      expect({ ...result.headers }).toEqual({
        ...HTML,
        'cache-control': 'public, max-age=60',
        'content-encoding': 'br',
        vary: 'Accept-Encoding',
        etag: 'W/"abc123"',
      });
    });

    it('keeps a weak ETag as it is, and adds none when there was none', () => {
      expect(decision({ ...HTML, etag: 'W/"v1"' }).headers.etag).toBe('W/"v1"');
      expect('etag' in decision(HTML).headers).toBe(false);
    });

    it('merges Accept-Encoding into an existing Vary', () => {
      const vary = (value: string | string[]) => decision({ ...HTML, Vary: value }).headers.vary;
      expect(vary('Origin')).toBe('Origin, Accept-Encoding');
      expect(vary(['Origin', 'Cookie'])).toBe('Origin, Cookie, Accept-Encoding');
      expect(vary('origin, accept-encoding')).toBe('origin, accept-encoding');
      expect(vary('*')).toBe('*');
      expect(vary('')).toBe('Accept-Encoding');
      expect('Vary' in decision({ ...HTML, Vary: 'Origin' }).headers).toBe(false);
    });

    it('does not touch the input record', () => {
      const input = { ...HTML, 'content-length': '5000' };
      decision(input);
      expect(input).toEqual({ ...HTML, 'content-length': '5000' });
    });

    it('compresses a Content-Encoding of identity', () => {
      const result = decision({ ...HTML, 'content-encoding': 'identity' });
      expect(result.compress).toBe(true);
      expect(result.headers['content-encoding']).toBe('br');
    });
  });

  describe('skips', () => {
    const big = { ...HTML, 'content-length': '100000' };
    const cases: Array<[string, HeaderRecord, Partial<CompressionContext>, string]> = [
      ['HEAD', big, { method: 'HEAD' }, 'method'],
      ['head (any case)', big, { method: 'head' }, 'method'],
      ['101', big, { statusCode: 101 }, 'status'],
      ['204', HTML, { statusCode: 204 }, 'status'],
      ['205', HTML, { statusCode: 205 }, 'status'],
      ['206', { ...big, 'content-range': 'bytes 0-99999/200000' }, { statusCode: 206 }, 'status'],
      ['304', HTML, { statusCode: 304 }, 'status'],
      [
        'a Content-Range',
        { ...big, 'content-range': 'bytes */100000' },
        { statusCode: 416 },
        'content_range',
      ],
      ['already gzip', { ...big, 'content-encoding': 'gzip' }, {}, 'content_encoding'],
      ['already br', { ...big, 'Content-Encoding': 'br' }, {}, 'content_encoding'],
      ['no-transform', { ...big, 'cache-control': 'public, no-transform' }, {}, 'no_transform'],
      ['No-Transform', { ...big, 'Cache-Control': ['max-age=1', 'No-Transform'] }, {}, 'no_transform'],
      ['an image', { 'content-type': 'image/png', 'content-length': '100000' }, {}, 'content_type'],
      ['a video', { 'content-type': 'video/mp4' }, {}, 'content_type'],
      ['audio', { 'content-type': 'audio/ogg' }, {}, 'content_type'],
      ['a zip', { 'content-type': 'application/zip' }, {}, 'content_type'],
      ['no Content-Type', { 'content-length': '100000' }, {}, 'content_type'],
      ['server-sent events', { 'content-type': 'text/event-stream' }, {}, 'content_type'],
      [
        'a tiny body',
        { ...HTML, 'content-length': String(DEFAULT_MIN_COMPRESS_LENGTH - 1) },
        {},
        'too_small',
      ],
      ['an empty body', { ...HTML, 'content-length': '0' }, {}, 'too_small'],
      ['no Accept-Encoding', big, { acceptEncoding: undefined }, 'not_accepted'],
      ['only deflate', big, { acceptEncoding: 'deflate' }, 'not_accepted'],
      ['identity preferred', big, { acceptEncoding: 'gzip;q=0.2, identity' }, 'not_accepted'],
    ];
    for (const [name, headers, context, reason] of cases) {
      it(name, () => {
        const result = decision(headers, context);
        expect(result.compress).toBe(false);
        if (result.compress) return;
        expect(result.reason).toBe(reason);
        if (reason === 'not_accepted') {
          // Another client would get the compressed variant: caches must know.
          expect({ ...result.headers }).toEqual({ ...headers, vary: 'Accept-Encoding' });
        } else {
          expect(result.headers).toBe(headers);
        }
      });
    }

    it('compresses at exactly the minimum length, and when the length is unknown or malformed', () => {
      expect(decision({ ...HTML, 'content-length': String(DEFAULT_MIN_COMPRESS_LENGTH) }).compress).toBe(
        true,
      );
      expect(decision(HTML).compress).toBe(true);
      expect(decision({ ...HTML, 'content-length': 'nope' }).compress).toBe(true);
      expect(compressResponse({ ...HTML, 'content-length': '4000' }, GET, { minLength: 4096 }).compress).toBe(
        false,
      );
    });

    it('compresses statuses with a body: errors and redirects included', () => {
      for (const statusCode of [200, 201, 301, 404, 500, 503]) {
        expect([statusCode, decision(HTML, { statusCode }).compress]).toEqual([statusCode, true]);
      }
    });
  });
});
