import { describe, expect, it } from 'vitest';
import { readSshString, sshMpint, sshString, sshUint32, sshUint64 } from './ssh-wire.js';

const hex = (buffer: Buffer) => buffer.toString('hex');

describe('SSH wire encoding (RFC 4251 section 5)', () => {
  it('encodes uint32, uint64 and strings big-endian with a length prefix', () => {
    expect(hex(sshUint32(0x01020304))).toBe('01020304');
    expect(hex(sshUint64(0xffffffffffffffffn))).toBe('ffffffffffffffff');
    expect(hex(sshUint64(1n))).toBe('0000000000000001');
    expect(hex(sshString('ssh-ed25519'))).toBe(`0000000b${Buffer.from('ssh-ed25519').toString('hex')}`);
    expect(hex(sshString(''))).toBe('00000000');
    expect(hex(sshString('é'))).toBe('00000002c3a9');
  });

  // The examples of RFC 4251 section 5, as unsigned magnitudes.
  it.each([
    ['', '00000000'],
    ['00', '00000000'],
    ['09a378f9b2e332a7', '0000000809a378f9b2e332a7'],
    ['80', '000000020080'],
    ['0000ff', '0000000200ff'],
    ['7f', '000000017f'],
  ])('encodes the magnitude %s as the mpint %s', (magnitude, encoded) => {
    expect(hex(sshMpint(Buffer.from(magnitude, 'hex')))).toBe(encoded);
  });

  it('reads back a string and refuses truncated input', () => {
    const buffer = Buffer.concat([sshString('abc'), sshString(Buffer.from([1, 2]))]);
    const first = readSshString(buffer, 0);
    expect(first.value.toString()).toBe('abc');
    expect(hex(readSshString(buffer, first.next).value)).toBe('0102');
    expect(() => readSshString(buffer.subarray(0, 5), 0)).toThrow(/past the end/);
    expect(() => readSshString(Buffer.from([0, 0]), 0)).toThrow(/truncated/);
  });
});
