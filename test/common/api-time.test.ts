import { describe, expect, it } from 'vitest';
import { apiTime } from '../../src/common/api-time.js';

/** The form apiTime writes out by hand, derived from toISOString as the API first printed it. */
const fromIso = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, '+00:00');

describe('apiTime', () => {
  it('prints seconds and +00:00, dropping milliseconds', () => {
    expect(apiTime(new Date('2026-12-06T23:05:09.987Z'))).toBe('2026-12-06T23:05:09+00:00');
    expect(apiTime(new Date('2001-01-01T00:00:00.000Z'))).toBe('2001-01-01T00:00:00+00:00');
  });

  it('keeps null', () => {
    expect(apiTime(null)).toBeNull();
  });

  it('agrees with toISOString over a spread of instants, and at the edges of four-digit years', () => {
    for (let t = -62_135_596_800_000; t < 253_402_300_799_000; t += 7_919_999_999) expect(apiTime(new Date(t))).toBe(fromIso(new Date(t)));
    for (const iso of ['1000-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '0999-12-31T23:59:59.000Z', '0000-01-01T00:00:00.000Z']) {
      expect(apiTime(new Date(iso))).toBe(fromIso(new Date(iso)));
    }
    expect(apiTime(new Date(Date.UTC(10000, 0, 1)))).toBe('+010000-01-01T00:00:00+00:00');
  });

  it('refuses an invalid date as toISOString does', () => {
    expect(() => apiTime(new Date(Number.NaN))).toThrow(RangeError);
  });
});
