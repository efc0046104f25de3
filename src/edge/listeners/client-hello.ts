import type { Readable } from 'node:stream';

/**
 * Reads the TLS ClientHello at the start of a connection without consuming it for TLS: the bytes
 * read are handed back (`buffered`) so the caller can replay them into a TLS server of its own
 * (terminate) or forward them untouched (passthrough). Node has no built-in for this.
 *
 * The parser is strict: a length that overruns its enclosing structure, a record that is not a
 * handshake record, trailing bytes, a repeated extension or an invalid host name all fail with a
 * `ClientHelloError`, and it never throws anything else.
 */

export type ClientHelloErrorCode =
  /** The first bytes are not a TLS handshake record carrying a ClientHello. */
  | 'not_tls'
  /** TLS framing, but a length or field is inconsistent. */
  | 'malformed'
  /** The ClientHello (with its record headers) would exceed the cap. */
  | 'too_large'
  /** The client did not send a complete ClientHello in time. */
  | 'timeout'
  /** The connection ended or failed before a complete ClientHello arrived. */
  | 'closed';

export class ClientHelloError extends Error {
  override readonly name = 'ClientHelloError';
  readonly code: ClientHelloErrorCode;

  constructor(code: ClientHelloErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

export interface ClientHello {
  /** The `host_name` of the server_name extension, lowercased; undefined when the client sent none. */
  serverName: string | undefined;
  /** The protocols of the ALPN extension (RFC 7301), in the client's order; empty when it sent none. */
  alpnProtocols: string[];
  /** Every byte read from the socket, the ClientHello and whatever followed it in the same reads. */
  buffered: Buffer;
}

const CONTENT_TYPE_HANDSHAKE = 0x16;
const HANDSHAKE_CLIENT_HELLO = 0x01;
const EXTENSION_SERVER_NAME = 0x0000;
const EXTENSION_ALPN = 0x0010;
const NAME_TYPE_HOST_NAME = 0x00;

export const RECORD_HEADER_BYTES = 5;
/** The largest TLSPlaintext fragment (RFC 8446 §5.1). */
export const MAX_RECORD_FRAGMENT = 16 * 1024;
/** The cap on the bytes a ClientHello may occupy on the wire: 16 KiB of records plus one header. */
export const MAX_CLIENT_HELLO_BYTES = MAX_RECORD_FRAGMENT + RECORD_HEADER_BYTES;
export const CLIENT_HELLO_TIMEOUT_MS = 10_000;

/** Bounds-checked reads over one structure; any overrun is a `malformed` ClientHelloError. */
class Reader {
  #offset = 0;

  constructor(
    readonly data: Buffer,
    readonly what: string,
  ) {}

  get remaining(): number {
    return this.data.length - this.#offset;
  }

  #take(length: number, field: string): Buffer {
    if (length > this.remaining) {
      throw malformed(`${this.what}: ${field} needs ${length} bytes, ${this.remaining} remain`);
    }
    const slice = this.data.subarray(this.#offset, this.#offset + length);
    this.#offset += length;
    return slice;
  }

  skip(length: number, field: string): void {
    this.#take(length, field);
  }

  uint8(field: string): number {
    return this.#take(1, field)[0] as number;
  }

  uint16(field: string): number {
    return this.#take(2, field).readUInt16BE(0);
  }

  /** A `<min..max>` vector with a 1- or 2-byte length prefix. */
  vector(prefixBytes: 1 | 2, min: number, max: number, field: string): Buffer {
    const length = prefixBytes === 1 ? this.uint8(field) : this.uint16(field);
    if (length < min || length > max) {
      throw malformed(`${this.what}: ${field} length ${length} is outside ${min}..${max}`);
    }
    return this.#take(length, field);
  }

  end(): void {
    if (this.remaining !== 0) throw malformed(`${this.what}: ${this.remaining} trailing bytes`);
  }
}

function malformed(message: string): ClientHelloError {
  return new ClientHelloError('malformed', `malformed ClientHello: ${message}`);
}

function notTls(message: string): ClientHelloError {
  return new ClientHelloError('not_tls', `not a TLS ClientHello: ${message}`);
}

function tooLarge(limit: number): ClientHelloError {
  return new ClientHelloError('too_large', `the ClientHello exceeds ${limit} bytes`);
}

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

/** RFC 6066 §3: an ASCII host name, no trailing dot; labels of letters, digits, '-' and '_'. */
function hostName(bytes: Buffer): string {
  if (bytes.length > 253) throw malformed(`server_name: host name of ${bytes.length} bytes`);
  for (const byte of bytes) {
    if (byte < 0x21 || byte > 0x7e) throw malformed('server_name: host name is not printable ASCII');
  }
  const name = bytes.toString('latin1').toLowerCase();
  if (!name.split('.').every((label) => LABEL.test(label))) {
    throw malformed(`server_name: ${JSON.stringify(name)} is not a host name`);
  }
  return name;
}

/** The `host_name` of a server_name extension's data (RFC 6066 §3). */
function serverNameOf(data: Buffer): string | undefined {
  const extension = new Reader(data, 'server_name');
  const list = new Reader(extension.vector(2, 1, 0xffff, 'server_name_list'), 'server_name_list');
  extension.end();
  let host: string | undefined;
  while (list.remaining > 0) {
    const type = list.uint8('name_type');
    const name = list.vector(2, 1, 0xffff, 'name');
    if (type !== NAME_TYPE_HOST_NAME) continue;
    if (host !== undefined) throw malformed('server_name: more than one host_name');
    host = hostName(name);
  }
  return host;
}

/** The protocol names of an application_layer_protocol_negotiation extension's data (RFC 7301 §3.1). */
function alpnProtocolsOf(data: Buffer): string[] {
  const extension = new Reader(data, 'application_layer_protocol_negotiation');
  const list = new Reader(extension.vector(2, 2, 0xffff, 'protocol_name_list'), 'protocol_name_list');
  extension.end();
  const protocols: string[] = [];
  while (list.remaining > 0) protocols.push(list.vector(1, 1, 0xff, 'protocol_name').toString('latin1'));
  return protocols;
}

type HelloFields = Pick<ParsedClientHello, 'serverName' | 'alpnProtocols'>;

/** The fields after the handshake header of a ClientHello (RFC 8446 §4.1.2, RFC 5246 §7.4.1.2). */
function fieldsOfBody(body: Buffer): HelloFields {
  const hello = new Reader(body, 'ClientHello');
  hello.skip(2, 'legacy_version');
  hello.skip(32, 'random');
  hello.vector(1, 0, 32, 'legacy_session_id');
  const suites = hello.vector(2, 2, 0xfffe, 'cipher_suites');
  if (suites.length % 2 !== 0) throw malformed('ClientHello: cipher_suites has an odd length');
  hello.vector(1, 1, 0xff, 'legacy_compression_methods');
  // Before TLS 1.3 the extensions block may be absent altogether.
  if (hello.remaining === 0) return { serverName: undefined, alpnProtocols: [] };
  const extensions = new Reader(hello.vector(2, 0, 0xffff, 'extensions'), 'extensions');
  hello.end();
  const seen = new Set<number>();
  let serverName: string | undefined;
  let alpnProtocols: string[] = [];
  while (extensions.remaining > 0) {
    const type = extensions.uint16('extension_type');
    const data = extensions.vector(2, 0, 0xffff, 'extension_data');
    if (seen.has(type)) throw malformed(`extensions: type ${type} appears twice`);
    seen.add(type);
    if (type === EXTENSION_SERVER_NAME) serverName = serverNameOf(data);
    if (type === EXTENSION_ALPN) alpnProtocols = alpnProtocolsOf(data);
  }
  return { serverName, alpnProtocols };
}

export interface ParsedClientHello {
  serverName: string | undefined;
  alpnProtocols: string[];
  /** Bytes up to the end of the ClientHello message (record headers included). */
  length: number;
}

/**
 * Parses the ClientHello at the start of `data`, which may span several handshake records.
 * Returns undefined while more bytes are needed; throws `ClientHelloError` as soon as the bytes
 * seen cannot start a valid ClientHello within `maxBytes`.
 */
export function parseClientHello(
  data: Buffer,
  maxBytes = MAX_CLIENT_HELLO_BYTES,
): ParsedClientHello | undefined {
  const scanned = scan(data, maxBytes);
  return 'needed' in scanned ? undefined : scanned;
}

/** The ClientHello, or how many bytes `data` must hold at least before scanning again can tell more. */
function scan(data: Buffer, maxBytes: number): ParsedClientHello | { needed: number } {
  const fragments: Buffer[] = [];
  let handshakeBytes = 0;
  /** The handshake header plus the message length it declares, once its 4 bytes have arrived. */
  let messageBytes: number | undefined;
  /** Where the message can end at the earliest, from what was seen so far. */
  let earliestEnd = 0;
  let offset = 0;
  const needed = (bytes: number) => ({ needed: Math.max(bytes, earliestEnd) });
  for (;;) {
    const first = offset === 0;
    const fail = first ? notTls : (message: string) => malformed(`record at byte ${offset}: ${message}`);
    if (data.length <= offset) return needed(offset + 1);
    const contentType = data[offset];
    if (contentType !== CONTENT_TYPE_HANDSHAKE) {
      throw fail(`content type 0x${contentType?.toString(16).padStart(2, '0')} is not handshake (0x16)`);
    }
    if (data.length <= offset + 1) return needed(offset + 2);
    if (data[offset + 1] !== 0x03) throw fail(`record version major ${data[offset + 1]} is not 3`);
    if (data.length < offset + RECORD_HEADER_BYTES) return needed(offset + RECORD_HEADER_BYTES);
    const recordLength = data.readUInt16BE(offset + 3);
    if (recordLength === 0) throw malformed(`record at byte ${offset} is empty`);
    if (recordLength > MAX_RECORD_FRAGMENT) {
      throw malformed(`record at byte ${offset} declares ${recordLength} bytes (max ${MAX_RECORD_FRAGMENT})`);
    }
    const start = offset + RECORD_HEADER_BYTES;
    const recordEnd = start + recordLength;
    const end = Math.min(recordEnd, data.length);
    if (messageBytes === undefined && handshakeBytes === 0 && end > start) {
      const type = data[start];
      if (type !== HANDSHAKE_CLIENT_HELLO) {
        throw notTls(`handshake message type ${type} is not ClientHello (1)`);
      }
    }
    fragments.push(data.subarray(start, end));
    handshakeBytes += end - start;
    if (messageBytes === undefined && handshakeBytes >= 4) {
      messageBytes = 4 + Buffer.concat(fragments, 4).readUIntBE(1, 3);
    }
    if (messageBytes !== undefined && handshakeBytes >= messageBytes) {
      const length = end - (handshakeBytes - messageBytes);
      if (length > maxBytes) throw tooLarge(maxBytes);
      const message = Buffer.concat(fragments, messageBytes);
      return { ...fieldsOfBody(message.subarray(4)), length };
    }
    // Past the cap already means the message never fits.
    const missing = (messageBytes ?? 4) - handshakeBytes;
    earliestEnd = end + missing + (missing > recordEnd - end ? RECORD_HEADER_BYTES : 0);
    if (earliestEnd > maxBytes) throw tooLarge(maxBytes);
    if (end < recordEnd) return needed(earliestEnd);
    offset = recordEnd;
  }
}

export interface ReadClientHelloOptions {
  timeoutMs?: number;
  maxBytes?: number;
}

/**
 * Reads from `socket` until a complete ClientHello has arrived, then pauses it and stops listening.
 * The caller owns the socket's 'error' handling before and after: this only listens while reading.
 * Rejects with a `ClientHelloError` (non-TLS, malformed, too large, timeout, closed early).
 */
export function readClientHello(
  socket: Readable,
  options: ReadClientHelloOptions = {},
): Promise<ClientHello> {
  const timeoutMs = options.timeoutMs ?? CLIENT_HELLO_TIMEOUT_MS;
  const maxBytes = options.maxBytes ?? MAX_CLIENT_HELLO_BYTES;
  return new Promise((resolve, reject) => {
    // Grown by doubling, so a client trickling bytes costs linear copying, and scanned only once
    // enough bytes are in to change the answer.
    let storage = Buffer.alloc(0);
    let length = 0;
    let scanAt = 1;
    const buffered = () => storage.subarray(0, length);
    const finish = () => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('close', onEnd);
      socket.off('error', onError);
      socket.pause();
    };
    const fail = (error: ClientHelloError) => {
      finish();
      reject(error);
    };
    const onData = (data: Buffer | string) => {
      const chunk = typeof data === 'string' ? Buffer.from(data) : data;
      if (length + chunk.length > storage.length) {
        const grown = Buffer.allocUnsafe(Math.max(length + chunk.length, storage.length * 2, 512));
        storage.copy(grown, 0, 0, length);
        storage = grown;
      }
      chunk.copy(storage, length);
      length += chunk.length;
      if (length < scanAt) return;
      let scanned: ParsedClientHello | { needed: number };
      try {
        scanned = scan(buffered(), maxBytes);
      } catch (error) {
        fail(
          error instanceof ClientHelloError
            ? error
            : new ClientHelloError('malformed', 'unreadable ClientHello', { cause: error }),
        );
        return;
      }
      if ('needed' in scanned) {
        scanAt = scanned.needed;
        return;
      }
      finish();
      resolve({
        serverName: scanned.serverName,
        alpnProtocols: scanned.alpnProtocols,
        buffered: Buffer.from(buffered()),
      });
    };
    const onEnd = () =>
      fail(new ClientHelloError('closed', `the connection ended after ${length} bytes of ClientHello`));
    const onError = (error: Error) =>
      fail(
        new ClientHelloError('closed', 'the connection failed before a complete ClientHello', {
          cause: error,
        }),
      );
    const timer = setTimeout(
      () => fail(new ClientHelloError('timeout', `no complete ClientHello within ${timeoutMs} ms`)),
      timeoutMs,
    );
    if (socket.destroyed || socket.readableEnded) {
      fail(new ClientHelloError('closed', 'the connection is already closed'));
      return;
    }
    socket.on('data', onData);
    socket.once('end', onEnd);
    socket.once('close', onEnd);
    socket.on('error', onError);
    socket.resume();
  });
}
