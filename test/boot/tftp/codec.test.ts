/** The pure parts: packet codec, option negotiation, path confinement, netascii conversion. */
import { describe, expect, it } from 'vitest';
import { negotiate } from '../../../src/boot/tftp/options.js';
import { encodeError, encodeOack, parsePacket, writeDataHeader } from '../../../src/boot/tftp/packets.js';
import { confine } from '../../../src/boot/tftp/resolve.js';
import { NetasciiSource } from '../../../src/boot/tftp/source.js';
import type { ByteSource } from '../../../src/boot/tftp/source.js';

const limits = { maxBlksize: 65464, maxWindowsize: 64, defaultTimeoutMs: 1000 };

describe('parsePacket', () => {
  it('reads a request with options, lower-casing names and mode, first occurrence winning', () => {
    const p = parsePacket(Buffer.from('\0\x01boot/pxelinux.0\0OCTET\0BlkSize\x001468\0blksize\x00512\0tsize\x000\0', 'latin1'));
    expect(p).toEqual({
      kind: 'RRQ',
      filename: 'boot/pxelinux.0',
      mode: 'octet',
      options: new Map([
        ['blksize', '1468'],
        ['tsize', '0'],
      ]),
    });
  });

  it('tolerates NUL padding after the last option', () => {
    const p = parsePacket(Buffer.from('\0\x01f\0octet\0\0\0', 'latin1'));
    expect(p).toMatchObject({ kind: 'RRQ', filename: 'f' });
  });

  it('reads ACK and ERROR, and marks a fault with the opcode so ERRORs are never answered', () => {
    expect(parsePacket(Buffer.from([0, 4, 0xff, 0xfe]))).toEqual({ kind: 'ACK', block: 0xfffe });
    expect(parsePacket(Buffer.from('\0\x05\0\x01gone\0', 'latin1'))).toEqual({ kind: 'ERROR', code: 1, message: 'gone' });
    expect(parsePacket(Buffer.from([0, 5, 0]))).toMatchObject({ kind: 'fault', opcode: 5 });
    expect(parsePacket(Buffer.from([]))).toMatchObject({ kind: 'fault', code: 4 });
  });

  it('rejects an over-long filename', () => {
    const p = parsePacket(Buffer.from(`\0\x01${'a'.repeat(2000)}\0octet\0`, 'latin1'));
    expect(p).toMatchObject({ kind: 'fault', reason: 'filename too long' });
  });
});

describe('encoders', () => {
  it('encode ERROR and OACK as on the wire, with a printable message', () => {
    expect(encodeError(2, 'no\n')).toEqual(Buffer.from('\0\x05\0\x02no?\0', 'latin1'));
    expect(encodeOack(new Map([['blksize', '1468']]))).toEqual(Buffer.from('\0\x06blksize\x001468\0', 'latin1'));
    const data = Buffer.alloc(4);
    writeDataHeader(data, 0x1_0203);
    expect([...data]).toEqual([0, 3, 2, 3]);
  });
});

describe('negotiate', () => {
  it('keeps RFC 1350 defaults when nothing is asked', () => {
    expect(negotiate(new Map(), 10, limits)).toEqual({ blksize: 512, windowsize: 1, timeoutMs: 1000, oack: new Map() });
  });

  it('clamps to the server maximum and refuses values below the range', () => {
    const p = negotiate(new Map([['blksize', '70000'], ['windowsize', '65535']]), 10, { ...limits, maxBlksize: 1468 });
    expect(p).toMatchObject({ blksize: 1468, windowsize: 64 });
    expect(negotiate(new Map([['blksize', '7']]), 10, limits)).toMatchObject({ code: 8 });
    expect(negotiate(new Map([['blksize', ' 512']]), 10, limits)).toMatchObject({ code: 8 });
    expect(negotiate(new Map([['blksize', '65464']]), 10, limits)).toMatchObject({ blksize: 65464 });
  });

  it('answers tsize with the file size, or leaves it out when the size is unknown', () => {
    expect(negotiate(new Map([['tsize', '0']]), 1234, limits)).toMatchObject({ oack: new Map([['tsize', '1234']]) });
    expect(negotiate(new Map([['tsize', '0']]), null, limits)).toMatchObject({ oack: new Map() });
  });

  it('uses a negotiated timeout in seconds', () => {
    expect(negotiate(new Map([['timeout', '255']]), 1, limits)).toMatchObject({ timeoutMs: 255_000 });
  });
});

describe('confine', () => {
  it.each([
    ['pxelinux.0', 'pxelinux.0'],
    ['/pxelinux.0', 'pxelinux.0'],
    ['//a/./b//c', 'a/b/c'],
    ['/etc/passwd', 'etc/passwd'],
  ])('maps %s to %s', (input, output) => expect(confine(input)).toBe(output));

  it.each(['..', '../x', 'a/../b', 'a/..', '/', '.', ''])('refuses %j', (input) => expect(confine(input)).toBeNull());
});

/** A source handing out a buffer in slices of `step` bytes, to exercise boundaries. */
function sliced(data: Buffer, step: number): ByteSource {
  let pos = 0;
  return {
    take(dest, offset, length) {
      const n = Math.min(length, step, data.length - pos);
      data.copy(dest, offset, pos, pos + n);
      pos += n;
      return n;
    },
    get done() {
      return pos === data.length;
    },
    ready: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
}

describe('NetasciiSource', () => {
  it('turns LF into CR LF and CR into CR NUL across every block boundary', () => {
    const input = Buffer.from('a\nb\r\n\r\rc\n\n');
    const expected = Buffer.from('a\r\nb\r\0\r\n\r\0\r\0c\r\n\r\n', 'latin1');
    for (const block of [1, 2, 3, 5, 64]) {
      const src = new NetasciiSource(sliced(input, 3));
      const out: Buffer[] = [];
      while (!src.done) {
        const buf = Buffer.alloc(block);
        const n = src.take(buf, 0, block);
        out.push(buf.subarray(0, n));
      }
      expect(Buffer.concat(out).equals(expected)).toBe(true);
    }
  });
});
