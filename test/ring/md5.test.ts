import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { md5Words } from '../../src/ring/md5.js';

function reference(input: string): number[] {
  const digest = createHash('md5').update(input, 'utf8').digest();
  return [0, 4, 8, 12].map((o) => digest.readUInt32BE(o));
}

function words(input: string): number[] {
  const out = new Uint32Array(4);
  md5Words(input, out);
  return [...out];
}

describe('md5Words', () => {
  it.each([
    ['', 'd41d8cd98f00b204e9800998ecf8427e'],
    ['abc', '900150983cd24fb0d6963f7d28e17f72'],
    ['message digest', 'f96b697d7cb7938d525a2f31aaf161d0'],
    ['12345678901234567890123456789012345678901234567890123456789012345678901234567890', '57edf4a22be3c955ac49da2e2107b67a'],
  ])('matches the RFC 1321 test suite for %j', (input, hex) => {
    expect(words(input).map((w) => w.toString(16).padStart(8, '0')).join('')).toBe(hex);
  });

  it('agrees with node:crypto on any string, across the one-block boundary and beyond ASCII', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 130 }), fc.string({ maxLength: 70, unit: 'grapheme' }), fc.uuid()), (input) => {
        expect(words(input)).toEqual(reference(input));
      }),
      { numRuns: 500 },
    );
    for (let length = 50; length <= 70; length++) expect(words('x'.repeat(length))).toEqual(reference('x'.repeat(length)));
  });
});
