/**
 * SHA-crypt against OpenSSL: each expected hash below was made with `openssl passwd -5` or `-6`
 * (OpenSSL 3, `-salt` as given), which implement the same construction (glibc's crypt(3)).
 */
import { describe, expect, it } from 'vitest';
import { shaCrypt } from '../../src/common/sha-crypt.js';

describe('shaCrypt', () => {
  it('matches OpenSSL for SHA-256 and SHA-512, empty and long passwords, and rounds', () => {
    expect(shaCrypt('Hello world!', 'sha256', { salt: 'saltstring' })).toBe('$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5');
    expect(shaCrypt('Hello world!', 'sha512', { salt: 'saltstring' })).toBe('$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1');
    expect(shaCrypt('', 'sha256', { salt: 'abc' })).toBe('$5$abc$bBHLwRRW2Li0XKaX13kz/g2fkDil4Jx46aNvd.48MS8');
    const long = 'a much longer password that goes past sixty-four bytes, to test the stretch......';
    expect(shaCrypt(long, 'sha512', { salt: 'x/y.Z9' })).toBe('$6$x/y.Z9$gCG1LJzu2Wqa1YahegdD8KWcI3E8UHEEcB3Yh05dRcGWgYpWvR4r52QE/sYHni8q2MKzduA2t837je.KD02bH0');
    // The salt is cut at 16 characters, and rounds are written into the hash.
    expect(shaCrypt('Hello world!', 'sha256', { salt: 'saltstringsaltstring', rounds: 10000 })).toBe('$5$rounds=10000$saltstringsaltst$3xv.VbSHBb41AL9AvLeujZkZRBAwqFMz2.opqey6IcA');
  });

  it('draws a fresh 16-character salt each time', () => {
    const a = shaCrypt('pw');
    const b = shaCrypt('pw');
    expect(a).toMatch(/^\$5\$[./0-9A-Za-z]{16}\$[./0-9A-Za-z]{43}$/);
    expect(a).not.toBe(b);
    expect(() => shaCrypt('pw', 'sha256', { salt: 'no$dollars' })).toThrow(/salt/);
  });
});
