import { execFile } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { Duplex, PassThrough } from 'node:stream';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ClientHelloError,
  MAX_CLIENT_HELLO_BYTES,
  parseClientHello,
  readClientHello,
} from './client-hello.js';

/**
 * The ClientHello reader against real ClientHellos: openssl's and node's, captured from the wire by
 * a plain TCP server, then re-fragmented, truncated and mutated.
 */

/** The first handshake message a client sends, as framed on the wire (all its records). */
async function capture(client: (port: number) => void | Promise<void>): Promise<Buffer> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as net.AddressInfo).port;
  try {
    const captured = new Promise<Buffer>((resolve, reject) => {
      server.once('connection', (socket) => {
        let data = Buffer.alloc(0);
        socket.on('data', (chunk: Buffer) => {
          data = Buffer.concat([data, chunk]);
          // Independent framing: records until their handshake bytes cover the declared length.
          const records = framedHandshake(data);
          if (records) {
            socket.destroy();
            resolve(data.subarray(0, records));
          }
        });
        socket.on('error', reject);
      });
    });
    const run = client(port);
    const hello = await captured;
    await run;
    return hello;
  } finally {
    server.close();
  }
}

/** Bytes of the records holding the first handshake message, or undefined while incomplete. */
function framedHandshake(data: Buffer): number | undefined {
  let offset = 0;
  let handshake = Buffer.alloc(0);
  while (data.length >= offset + 5) {
    const length = data.readUInt16BE(offset + 3);
    if (data.length < offset + 5 + length) return undefined;
    handshake = Buffer.concat([handshake, data.subarray(offset + 5, offset + 5 + length)]);
    offset += 5 + length;
    if (handshake.length >= 4 && handshake.length >= 4 + handshake.readUIntBE(1, 3)) return offset;
  }
  return undefined;
}

function opensslClient(args: string[]): (port: number) => Promise<void> {
  return (port) =>
    new Promise((resolve) => {
      const child = execFile('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, ...args], () =>
        resolve(),
      );
      child.stdin?.end();
    });
}

function nodeClient(
  options: tls.ConnectionOptions,
  maxSendFragment?: number,
): (port: number) => Promise<void> {
  return (port) =>
    new Promise((resolve) => {
      const socket = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...options });
      if (maxSendFragment) expect(socket.setMaxSendFragment(maxSendFragment)).toBe(true);
      socket.on('error', () => resolve());
      socket.on('close', () => resolve());
    });
}

/** The handshake message inside `records`, framed again as records of at most `size` bytes. */
function refragment(records: Buffer, size: number): Buffer {
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset < records.length) {
    const length = records.readUInt16BE(offset + 3);
    parts.push(records.subarray(offset + 5, offset + 5 + length));
    offset += 5 + length;
  }
  const message = Buffer.concat(parts);
  const out: Buffer[] = [];
  for (let at = 0; at < message.length; at += size) {
    const fragment = message.subarray(at, at + size);
    const header = Buffer.from([0x16, records[1] as number, records[2] as number, 0, 0]);
    header.writeUInt16BE(fragment.length, 3);
    out.push(header, fragment);
  }
  return Buffer.concat(out);
}

/** What OpenSSL (node's TLS server) reads as the SNI of these bytes. */
async function opensslServerName(records: Buffer): Promise<string | undefined> {
  const input = new PassThrough();
  const transport = Duplex.from({ readable: input, writable: new PassThrough() });
  return new Promise((resolve, reject) => {
    const socket = new tls.TLSSocket(transport, {
      isServer: true,
      SNICallback: (name, callback) => {
        resolve(name);
        callback(null, undefined);
      },
    });
    socket.on('error', () => resolve(undefined));
    setTimeout(() => reject(new Error('OpenSSL did not process the ClientHello')), 2_000);
    input.write(records);
  });
}

/** A ClientHello built by hand: `extensions` are [type, data] pairs; undefined omits the block. */
function buildHello(extensions: Array<[number, Buffer]> | undefined, recordVersion = 0x0301): Buffer {
  const u16 = (value: number) => Buffer.from([value >> 8, value & 0xff]);
  const fields = [
    Buffer.from([0x03, 0x03]),
    Buffer.alloc(32, 7),
    Buffer.from([0]), // session id
    u16(2),
    Buffer.from([0x13, 0x01]),
    Buffer.from([1, 0]), // compression: null
  ];
  if (extensions) {
    const block = Buffer.concat(extensions.flatMap(([type, data]) => [u16(type), u16(data.length), data]));
    fields.push(u16(block.length), block);
  }
  const body = Buffer.concat(fields);
  const message = Buffer.concat([
    Buffer.from([1, body.length >> 16, (body.length >> 8) & 0xff, body.length & 0xff]),
    body,
  ]);
  return Buffer.concat([
    Buffer.from([0x16, recordVersion >> 8, recordVersion & 0xff]),
    u16(message.length),
    message,
  ]);
}

/** server_name extension data with the given [name_type, name] entries. */
function serverNameExtension(...entries: Array<[number, string | Buffer]>): [number, Buffer] {
  const list = Buffer.concat(
    entries.map(([type, name]) => {
      const bytes = typeof name === 'string' ? Buffer.from(name, 'latin1') : name;
      return Buffer.concat([Buffer.from([type, bytes.length >> 8, bytes.length & 0xff]), bytes]);
    }),
  );
  return [0, Buffer.concat([Buffer.from([list.length >> 8, list.length & 0xff]), list])];
}

/** parse, where anything thrown must be a ClientHelloError. */
function outcome(data: Buffer): 'incomplete' | 'error' | { serverName: string | undefined } {
  try {
    const parsed = parseClientHello(data);
    return parsed ? { serverName: parsed.serverName } : 'incomplete';
  } catch (error) {
    if (!(error instanceof ClientHelloError))
      throw new Error(`threw a non-ClientHelloError: ${String(error)}`);
    return 'error';
  }
}

/** Deterministic xorshift32, so a failing fuzz case reproduces. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 0x1_0000_0000;
  };
}

interface Captured {
  name: string;
  records: Buffer;
  serverName: string | undefined;
  /** The ALPN protocols the client offered. */
  alpn: string[];
}
const captured: Captured[] = [];
const BIG_ALPN = Array.from({ length: 20 }, (_, index) => `protocol-${index}-${'p'.repeat(100)}`);

beforeAll(async () => {
  const sources: Array<[string, string | undefined, string[], (port: number) => void | Promise<void>]> = [
    ['openssl -servername', 'x.example.com', [], opensslClient(['-servername', 'x.example.com'])],
    ['openssl -tls1_2', 'app.example.com', [], opensslClient(['-servername', 'App.Example.COM', '-tls1_2'])],
    ['openssl -noservername', undefined, [], opensslClient(['-noservername'])],
    // What an ACME CA's TLS-ALPN-01 validation sends (RFC 8737 §3).
    [
      'openssl -alpn acme-tls/1',
      'acme.example.com',
      ['acme-tls/1'],
      opensslClient(['-servername', 'acme.example.com', '-alpn', 'acme-tls/1']),
    ],
    ['node tls.connect', 'node.example.com', [], nodeClient({ servername: 'node.example.com' })],
    ['node tls.connect without SNI', undefined, [], nodeClient({})],
    [
      'node tls.connect, h2 and http/1.1',
      'h2.example.com',
      ['h2', 'http/1.1'],
      nodeClient({ servername: 'h2.example.com', ALPNProtocols: ['h2', 'http/1.1'] }),
    ],
    [
      'node tls.connect, large ALPN, 512-byte records',
      'big.example.com',
      BIG_ALPN,
      nodeClient({ servername: 'big.example.com', ALPNProtocols: BIG_ALPN }, 512),
    ],
  ];
  for (const [name, serverName, alpn, client] of sources) {
    captured.push({ name, serverName, alpn, records: await capture(client) });
  }
}, 20_000);

describe('parseClientHello on captured ClientHellos', () => {
  it('reads the SNI (lowercased, undefined without) and the ALPN protocols of openssl and node clients', async () => {
    for (const { name, records, serverName, alpn } of captured) {
      const parsed = parseClientHello(records);
      expect(parsed, name).toEqual({ serverName, alpnProtocols: alpn, length: records.length });
      // OpenSSL reads the same name from the same bytes.
      expect((await opensslServerName(records))?.toLowerCase(), name).toBe(serverName);
    }
  });

  it('reads a ClientHello that spans several records', async () => {
    const big = captured.find(({ name }) => name.includes('512-byte'))!;
    expect(big.records[3]! * 256 + big.records[4]!).toBeLessThanOrEqual(512);
    expect(big.records.length).toBeGreaterThan(2048);
    expect(parseClientHello(big.records)?.serverName).toBe('big.example.com');

    const small = captured[0]!;
    for (const size of [1, 2, 3, 4, 5, 37, 100]) {
      const refragmented = refragment(small.records, size);
      expect(parseClientHello(refragmented), `records of ${size}`).toEqual({
        serverName: 'x.example.com',
        alpnProtocols: [],
        length: refragmented.length,
      });
    }
    // The re-fragmented form is valid TLS: OpenSSL reads it too.
    expect(await opensslServerName(refragment(small.records, 3))).toBe('x.example.com');
  });

  it('ignores bytes after the ClientHello (early data, the next records)', () => {
    const { records } = captured[0]!;
    const withMore = Buffer.concat([records, Buffer.from([0x17, 3, 3, 0, 3, 1, 2, 3]), Buffer.alloc(5000)]);
    expect(parseClientHello(withMore)).toEqual({
      serverName: 'x.example.com',
      alpnProtocols: [],
      length: records.length,
    });
  });

  it('asks for more bytes at every truncation, for every capture and fragmentation', () => {
    for (const { name, records } of captured) {
      for (const form of [records, refragment(records, 7)]) {
        for (let cut = 0; cut < form.length; cut++) {
          expect(outcome(form.subarray(0, cut)), `${name} cut at ${cut}`).toBe('incomplete');
        }
      }
    }
  });

  it('never throws anything but ClientHelloError on mutated or random bytes', () => {
    const next = random(0x5eed1234);
    let errors = 0;
    let parsed = 0;
    for (const { records } of captured) {
      // Every byte set to boundary values: lengths that overrun, underrun and vanish.
      for (let at = 0; at < records.length; at++) {
        for (const value of [0x00, 0x01, 0x7f, 0xff, (records[at]! + 1) & 0xff, (records[at]! - 1) & 0xff]) {
          const mutated = Buffer.from(records);
          mutated[at] = value;
          const result = outcome(mutated);
          if (result === 'error') errors++;
          else if (typeof result === 'object') parsed++;
          // Truncated after the mutation too: still only our error or a request for more.
          expect(['incomplete', 'error']).toContain(outcome(mutated.subarray(0, at)));
        }
      }
      for (let round = 0; round < 300; round++) {
        const mutated = Buffer.from(records);
        const flips = 1 + Math.floor(next() * 8);
        for (let flip = 0; flip < flips; flip++) {
          mutated[Math.floor(next() * mutated.length)] = Math.floor(next() * 256);
        }
        outcome(mutated.subarray(0, Math.floor(next() * (mutated.length + 1))));
        outcome(mutated);
      }
    }
    for (let round = 0; round < 2000; round++) {
      const garbage = Buffer.alloc(Math.floor(next() * 600));
      for (let index = 0; index < garbage.length; index++) garbage[index] = Math.floor(next() * 256);
      // Framing that looks like a handshake record so the parser gets past the first bytes.
      if (round % 2 === 0 && garbage.length >= 6) garbage.set([0x16, 0x03, 0x01], 0);
      if (round % 4 === 0 && garbage.length >= 6) garbage[5] = 0x01;
      outcome(garbage);
    }
    // The mutations hit both sides: many are refused, many (those in random, ciphers...) still parse.
    expect(errors).toBeGreaterThan(100);
    expect(parsed).toBeGreaterThan(100);
  });
});

describe('parseClientHello refuses what is not a well-formed ClientHello', () => {
  const code = (data: Buffer) => {
    try {
      parseClientHello(data);
    } catch (error) {
      if (error instanceof ClientHelloError) return error.code;
      throw error;
    }
    return 'accepted';
  };

  it('non-TLS first bytes are refused at the first byte that proves it', () => {
    expect(code(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'))).toBe('not_tls');
    expect(code(Buffer.from('G'))).toBe('not_tls');
    expect(code(Buffer.from('SSH-2.0-OpenSSH_9.2\r\n'))).toBe('not_tls');
    // SSLv2-compatible hello, a TLS alert record, a record version not 3.x.
    expect(code(Buffer.from([0x80, 0x2e, 0x01, 0x03, 0x01]))).toBe('not_tls');
    expect(code(Buffer.from([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28]))).toBe('not_tls');
    expect(code(Buffer.from([0x16, 0x02]))).toBe('not_tls');
    // A handshake record whose message is a ServerHello (2), not a ClientHello.
    expect(code(Buffer.from([0x16, 0x03, 0x03, 0x00, 0x30, 0x02]))).toBe('not_tls');
  });

  it('refuses empty and oversized records and a ClientHello over the cap', () => {
    expect(code(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x00]))).toBe('malformed');
    expect(code(Buffer.from([0x16, 0x03, 0x01, 0x40, 0x01, 0x01]))).toBe('malformed');
    // Declares a 20000-byte message in its first 4 bytes: refused before it arrives.
    expect(code(Buffer.from([0x16, 0x03, 0x01, 0x40, 0x00, 0x01, 0x00, 0x4e, 0x20]))).toBe('too_large');
    // A 16 KiB message in one record is exactly the cap; so is a message 5 bytes shorter in two records.
    const max = buildHello([[0xffaa, Buffer.alloc(MAX_CLIENT_HELLO_BYTES - 56)]]);
    expect(max.length).toBe(MAX_CLIENT_HELLO_BYTES);
    expect(code(max)).toBe('accepted');
    // One more byte does not fit a record (record_overflow), and split over two records it is over the cap.
    const over = buildHello([[0xffaa, Buffer.alloc(MAX_CLIENT_HELLO_BYTES - 55)]]);
    expect(code(over)).toBe('malformed');
    expect(code(refragment(over, 16_000))).toBe('too_large');
    expect(code(refragment(max, 8192))).toBe('too_large');
    expect(code(refragment(buildHello([[0xffaa, Buffer.alloc(MAX_CLIENT_HELLO_BYTES - 61)]]), 8192))).toBe(
      'accepted',
    );
    // Refused as soon as the first of those records shows the message cannot fit.
    expect(code(refragment(max, 8192).subarray(0, 5 + 8192))).toBe('too_large');
  });

  it('refuses a non-handshake record in the middle of the ClientHello', () => {
    const split = refragment(captured[0]!.records, 50);
    const corrupted = Buffer.from(split);
    corrupted[55] = 0x17;
    expect(code(corrupted)).toBe('malformed');
  });

  it('reads SNI from hand-built ClientHellos, strictly', () => {
    const sni = (...entries: Array<[number, string | Buffer]>) =>
      buildHello([serverNameExtension(...entries)]);
    expect(parseClientHello(sni([0, 'Mixed.Example.com']))?.serverName).toBe('mixed.example.com');
    expect(parseClientHello(sni([0, 'a_b.example.com']))?.serverName).toBe('a_b.example.com');
    expect(parseClientHello(sni([0, '127.0.0.1']))?.serverName).toBe('127.0.0.1');
    // Unknown name types are skipped; only host_name counts.
    expect(parseClientHello(sni([7, 'other'], [0, 'host.example.com']))?.serverName).toBe('host.example.com');
    expect(parseClientHello(sni([7, 'other']))?.serverName).toBeUndefined();
    // No extensions block (allowed before TLS 1.3), and extensions without server_name.
    expect(parseClientHello(buildHello(undefined))?.serverName).toBeUndefined();
    expect(parseClientHello(buildHello([[10, Buffer.from([0, 2, 0, 29])]]))?.serverName).toBeUndefined();

    expect(code(sni([0, 'a.example.com'], [0, 'b.example.com']))).toBe('malformed');
    expect(code(sni([0, 'example.com.']))).toBe('malformed');
    expect(code(sni([0, '.example.com']))).toBe('malformed');
    expect(code(sni([0, 'a..example.com']))).toBe('malformed');
    expect(code(sni([0, 'bad host']))).toBe('malformed');
    expect(code(sni([0, 'nul\0.example.com']))).toBe('malformed');
    expect(code(sni([0, Buffer.from('bücher.example', 'utf8')]))).toBe('malformed');
    expect(code(sni([0, '-leading.example.com']))).toBe('malformed');
    expect(code(sni([0, `${'a'.repeat(64)}.example.com`]))).toBe('malformed');
    expect(code(sni([0, '']))).toBe('malformed');
    expect(code(buildHello([[0, Buffer.alloc(0)]]))).toBe('malformed');
    expect(code(buildHello([[0, Buffer.from([0, 0])]]))).toBe('malformed');
    // The list length disagrees with the extension length.
    expect(code(buildHello([[0, Buffer.from([0, 9, 0, 0, 3, 0x61, 0x62, 0x63])]]))).toBe('malformed');
    // Two extensions of the same type.
    expect(code(buildHello([serverNameExtension([0, 'a.example']), [0, Buffer.from([0, 0])]]))).toBe(
      'malformed',
    );
    expect(
      code(
        buildHello([
          [10, Buffer.alloc(2)],
          [10, Buffer.alloc(2)],
        ]),
      ),
    ).toBe('malformed');
  });

  it('refuses trailing bytes inside the message and inconsistent vectors', () => {
    const hello = buildHello(undefined);
    // Grow the declared record and message lengths by one trailing byte after the compression methods.
    const trailing = Buffer.concat([hello, Buffer.from([0])]);
    trailing.writeUInt16BE(hello.readUInt16BE(3) + 1, 3);
    trailing.writeUIntBE(hello.readUIntBE(6, 3) + 1, 6, 3);
    expect(code(trailing)).toBe('malformed');
    // Odd cipher_suites length, a 33-byte session id, no compression methods.
    const odd = Buffer.from(hello);
    odd.writeUInt16BE(3, 5 + 4 + 2 + 32 + 1);
    expect(code(odd)).toBe('malformed');
    const session = Buffer.from(hello);
    session[5 + 4 + 2 + 32] = 33;
    expect(code(session)).toBe('malformed');
  });
});

describe('readClientHello on a stream', () => {
  /** A socket-like stream fed by hand. */
  const feed = () => new PassThrough();

  it('collects a ClientHello arriving one byte at a time, and pauses the stream', async () => {
    const { records } = captured[0]!;
    const stream = feed();
    const reading = readClientHello(stream);
    const tail = Buffer.from('after');
    for (const byte of records) {
      stream.write(Buffer.from([byte]));
      await new Promise((resolve) => setImmediate(resolve));
    }
    stream.write(tail);
    const hello = await reading;
    expect(hello.serverName).toBe('x.example.com');
    expect(hello.buffered.equals(records)).toBe(true);
    expect(stream.isPaused()).toBe(true);
    expect(stream.listenerCount('data')).toBe(0);
    // Nothing after the ClientHello was consumed: the next read returns it.
    await new Promise((resolve) => setImmediate(resolve));
    expect((stream.read() as Buffer).equals(tail)).toBe(true);
  });

  it('hands back every byte read in the same chunk as the ClientHello', async () => {
    const { records } = captured.find(({ name }) => name === 'node tls.connect')!;
    const stream = feed();
    const reading = readClientHello(stream);
    const withEarlyData = Buffer.concat([records, Buffer.from('early')]);
    stream.write(withEarlyData);
    const hello = await reading;
    expect(hello.serverName).toBe('node.example.com');
    expect(hello.buffered.equals(withEarlyData)).toBe(true);
  });

  it('refuses HTTP immediately, a stream ending early, and a client that is too slow', async () => {
    const http = feed();
    const refused = readClientHello(http);
    http.write('GET / HTTP/1.1\r\n');
    await expect(refused).rejects.toMatchObject({ name: 'ClientHelloError', code: 'not_tls' });

    const early = feed();
    const ended = readClientHello(early);
    early.end(captured[0]!.records.subarray(0, 40));
    await expect(ended).rejects.toMatchObject({ code: 'closed' });

    const slow = feed();
    const started = Date.now();
    const timedOut = readClientHello(slow, { timeoutMs: 150 });
    slow.write(captured[0]!.records.subarray(0, 10));
    await expect(timedOut).rejects.toMatchObject({ code: 'timeout' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(slow.listenerCount('data')).toBe(0);
  });

  it('refuses a ClientHello whose records cannot fit the cap, without waiting for the rest', async () => {
    const stream = feed();
    const reading = readClientHello(stream);
    // A ClientHello declaring 16380 bytes in a first record of 4096: with the next record's header
    // it cannot end within 16 KiB + 5.
    const first = Buffer.from([0x16, 0x03, 0x01, 0x10, 0x00, 0x01, 0x00, 0x3f, 0xfc]);
    stream.write(Buffer.concat([first, Buffer.alloc(0x1000 - 4)]));
    await expect(reading).rejects.toMatchObject({ code: 'too_large' });
    expect(stream.listenerCount('data')).toBe(0);
  });

  it('fails on a socket reset mid-ClientHello with its error as the cause', async () => {
    const stream = feed();
    const reading = readClientHello(stream);
    stream.write(captured[0]!.records.subarray(0, 20));
    stream.destroy(new Error('ECONNRESET'));
    const error = await reading.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ClientHelloError);
    expect((error as ClientHelloError).code).toBe('closed');
    expect(((error as Error).cause as Error).message).toBe('ECONNRESET');
  });
});

afterAll(() => {
  captured.length = 0;
});
