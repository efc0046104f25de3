/**
 * The SSH wire encodings of RFC 4251 section 5 (uint32, uint64, string, mpint) that public key blobs,
 * signatures and OpenSSH certificates are built from.
 */

export function sshUint32(value: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(value);
  return out;
}

export function sshUint64(value: bigint): Buffer {
  const out = Buffer.alloc(8);
  out.writeBigUInt64BE(value);
  return out;
}

/** A length-prefixed byte string; text is UTF-8. */
export function sshString(value: Buffer | string): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  return Buffer.concat([sshUint32(bytes.length), bytes]);
}

/**
 * A non-negative integer given as unsigned big-endian bytes: leading zeros are dropped and one zero
 * byte is put back when the top bit is set, because an mpint is two's complement.
 */
export function sshMpint(unsignedBigEndian: Buffer): Buffer {
  let start = 0;
  while (start < unsignedBigEndian.length && unsignedBigEndian[start] === 0) start++;
  const magnitude = unsignedBigEndian.subarray(start);
  const needsPad = magnitude.length > 0 && ((magnitude[0] as number) & 0x80) !== 0;
  return sshString(needsPad ? Buffer.concat([Buffer.from([0]), magnitude]) : magnitude);
}

/** Reads the leading `string` of `buffer` at `offset`; throws on a truncated buffer. */
export function readSshString(buffer: Buffer, offset: number): { value: Buffer; next: number } {
  if (offset + 4 > buffer.length) throw new Error(`SSH string at byte ${offset} is truncated`);
  const length = buffer.readUInt32BE(offset);
  const end = offset + 4 + length;
  if (end > buffer.length)
    throw new Error(`SSH string at byte ${offset} claims ${length} bytes past the end`);
  return { value: buffer.subarray(offset + 4, end), next: end };
}
