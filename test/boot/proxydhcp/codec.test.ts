/**
 * The DHCP codec: hand-built packets are read field by field, every length is bounds-checked (a bad
 * datagram is a `DhcpDecodeError`, never anything else), and encode/parse round-trip — checked on
 * random packets and random bytes with fast-check.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clientMac, DhcpDecodeError, DhcpEncodeError, encodeDhcp, MAX_PACKET, parseDhcp } from '../../../src/boot/proxydhcp/codec.js';
import type { DhcpPacket } from '../../../src/boot/proxydhcp/codec.js';

/** A DHCPDISCOVER as a PXE ROM sends it, built byte by byte (not with the encoder under test). */
function discoverBytes(options: number[]): Buffer {
  const head = Buffer.alloc(236);
  head[0] = 1;
  head[1] = 1;
  head[2] = 6;
  head.writeUInt32BE(0xdeadbeef, 4);
  head.writeUInt16BE(4, 8);
  head.writeUInt16BE(0x8000, 10);
  Buffer.from([10, 0, 0, 9]).copy(head, 24);
  Buffer.from([0x52, 0x54, 0x00, 0x12, 0x34, 0x56]).copy(head, 28);
  return Buffer.concat([head, Buffer.from([99, 130, 83, 99]), Buffer.from(options)]);
}

const ip = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((p) => p.join('.'));
const packetArb: fc.Arbitrary<DhcpPacket> = fc.record({
  op: fc.nat(255),
  htype: fc.nat(255),
  hlen: fc.nat(16),
  hops: fc.nat(255),
  xid: fc.nat(0xffffffff),
  secs: fc.nat(0xffff),
  flags: fc.nat(0xffff),
  ciaddr: ip,
  yiaddr: ip,
  siaddr: ip,
  giaddr: ip,
  chaddr: fc.uint8Array({ minLength: 16, maxLength: 16 }).map((a) => Buffer.from(a)),
  sname: fc.uint8Array({ minLength: 64, maxLength: 64 }).map((a) => Buffer.from(a)),
  file: fc.uint8Array({ minLength: 128, maxLength: 128 }).map((a) => Buffer.from(a)),
  // Distinct codes 1–254; values up to 600 bytes (split into pieces of 255 on the wire). The total
  // stays under 1500 bytes: 6 options of at most 600 bytes could exceed it, so it is filtered.
  options: fc
    .uniqueArray(fc.tuple(fc.integer({ min: 1, max: 254 }), fc.uint8Array({ maxLength: 600 })), { selector: ([code]) => code, maxLength: 6 })
    .map((entries) => new Map(entries.map(([code, value]) => [code, Buffer.from(value)]))),
}).filter((p) => [...p.options.values()].reduce((n, v) => n + v.length + 2 * Math.max(1, Math.ceil(v.length / 255)), 0) < MAX_PACKET - 241);

describe('DHCP codec', () => {
  it('reads the header and the options of a PXE DHCPDISCOVER', () => {
    const bytes = discoverBytes([53, 1, 1, 0, 0, 93, 2, 0, 7, 60, 9, ...Buffer.from('PXEClient'), 255, 0, 0, 0]);
    const p = parseDhcp(bytes);
    expect(p).toMatchObject({ op: 1, htype: 1, hlen: 6, xid: 0xdeadbeef, secs: 4, flags: 0x8000, ciaddr: '0.0.0.0', giaddr: '10.0.0.9' });
    expect(clientMac(p)).toBe('52:54:00:12:34:56');
    expect([...p.options.keys()]).toEqual([53, 93, 60]);
    expect(p.options.get(93)).toEqual(Buffer.from([0, 7]));
    expect(p.options.get(60)!.toString()).toBe('PXEClient');
  });

  it('concatenates a repeated option (RFC 3396) and stops at the end option', () => {
    const p = parseDhcp(discoverBytes([43, 2, 1, 2, 53, 1, 1, 43, 1, 3, 255, 77, 9, 9]));
    expect(p.options.get(43)).toEqual(Buffer.from([1, 2, 3]));
    expect(p.options.has(77)).toBe(false);
  });

  it('refuses, naming the field: short packets, no cookie, hlen > 16, truncated options, oversized packets', () => {
    const cases: Array<[Buffer, string]> = [
      [Buffer.alloc(100), 'length'],
      [Buffer.alloc(MAX_PACKET + 1), 'length'],
      [Buffer.concat([discoverBytes([]).subarray(0, 236), Buffer.from([1, 2, 3, 4])]), 'cookie'],
      [(() => { const b = discoverBytes([255]); b[2] = 17; return b; })(), 'hlen'],
      [discoverBytes([53, 1, 1, 60, 20, 1, 2]), 'option 60'],
      [discoverBytes([53]), 'option 53'],
    ];
    for (const [bytes, field] of cases) {
      const err = (() => {
        try {
          parseDhcp(bytes);
        } catch (e) {
          return e;
        }
        return null;
      })();
      expect(err, field).toBeInstanceOf(DhcpDecodeError);
      expect((err as DhcpDecodeError).field).toBe(field);
    }
  });

  it('encodes to at least 300 bytes with the end option, splitting values over 255 bytes', () => {
    const p = parseDhcp(discoverBytes([53, 1, 1, 255]));
    p.options.set(67, Buffer.alloc(300, 0x61));
    const bytes = encodeDhcp(p);
    expect(bytes.length).toBeGreaterThanOrEqual(300);
    // 53 (3 bytes), then 67 as 255 + 45 bytes.
    expect([bytes[243], bytes[244], bytes[245 + 255], bytes[246 + 255]]).toEqual([67, 255, 67, 45]);
    expect(parseDhcp(bytes).options.get(67)).toEqual(Buffer.alloc(300, 0x61));
  });

  it('refuses to encode bad values, naming the field', () => {
    const p = parseDhcp(discoverBytes([255]));
    expect(() => encodeDhcp({ ...p, siaddr: '10.0.0.256' })).toThrow(new DhcpEncodeError('siaddr', '"10.0.0.256" is not an IPv4 address'));
    expect(() => encodeDhcp({ ...p, options: new Map([[255, Buffer.alloc(1)]]) })).toThrow(DhcpEncodeError);
    expect(() => encodeDhcp({ ...p, file: Buffer.alloc(3) })).toThrow(/file: must be 128 bytes/);
    expect(() => encodeDhcp({ ...p, options: new Map([[43, Buffer.alloc(1300)]]) })).toThrow(/options: the packet would be/);
  });

  it('parse(encode(p)) is p', () => {
    fc.assert(
      fc.property(packetArb, (p) => {
        expect(parseDhcp(encodeDhcp(p))).toEqual(p);
      }),
      { numRuns: 500 },
    );
  });

  it('encode(parse(x)) is x for encoded packets', () => {
    fc.assert(
      fc.property(packetArb, (p) => {
        const bytes = encodeDhcp(p);
        expect(encodeDhcp(parseDhcp(bytes)).equals(bytes)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('random bytes, and valid packets with random damage, parse or throw DhcpDecodeError — nothing else', () => {
    const damaged = fc.tuple(packetArb, fc.array(fc.tuple(fc.nat(), fc.nat(255)), { maxLength: 8 }), fc.nat()).map(([p, flips, cut]) => {
      const bytes = Buffer.from(encodeDhcp(p));
      for (const [at, value] of flips) bytes[240 + (at % Math.max(1, bytes.length - 240))] = value;
      return bytes.subarray(0, 236 + (cut % (bytes.length - 235)));
    });
    const raw = fc.uint8Array({ maxLength: MAX_PACKET + 10 }).map((a) => {
      const b = Buffer.from(a);
      // Half of them carry the cookie, so the option parser is reached.
      if (b.length >= 240 && b[0]! % 2 === 0) Buffer.from([99, 130, 83, 99]).copy(b, 236);
      return b;
    });
    fc.assert(
      fc.property(fc.oneof(damaged, raw), (bytes) => {
        try {
          const p = parseDhcp(bytes);
          // Whatever parses re-encodes (when it fits) to something that parses the same.
          const again = parseDhcp(encodeDhcp(p));
          expect(again.options).toEqual(p.options);
        } catch (err) {
          if (err instanceof DhcpEncodeError && err.field === 'options') return;
          expect(err).toBeInstanceOf(DhcpDecodeError);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
