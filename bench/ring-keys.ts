/**
 * Benchmark inputs: random UUID keys from a seeded generator (so that every run, and the Python
 * side, measures the same keys) and host names.
 */
import { writeFileSync } from 'node:fs';

/** sfc32: a small, fast, well-tested 32-bit PRNG; deterministic for a given seed. */
function sfc32(seed: number): () => number {
  let a = 0x9e3779b9;
  let b = 0x243f6a88;
  let c = 0xb7e15162;
  let d = seed | 0;
  const next = (): number => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return t >>> 0;
  };
  for (let i = 0; i < 15; i++) next();
  return next;
}

const HEX_DIGITS = '0123456789abcdef';

/**
 * `count` random version-4 UUID strings from `seed`. Each is made in one `String.fromCharCode`
 * call, so it is a flat string like one read from JSON or a database row (a string built by
 * concatenation is a tree that V8 flattens on first access, which would bias the first pass).
 */
export function uuidKeys(count: number, seed: number): string[] {
  const next = sfc32(seed);
  const keys = new Array<string>(count);
  const codes = new Array<number>(36);
  for (let k = 0; k < count; k++) {
    let pos = 0;
    for (let i = 0; i < 16; i += 4) {
      const r = next();
      for (let j = 0; j < 4; j++) {
        let byte = (r >>> (j * 8)) & 0xff;
        const index = i + j;
        if (index === 6) byte = (byte & 0x0f) | 0x40;
        if (index === 8) byte = (byte & 0x3f) | 0x80;
        if (index === 4 || index === 6 || index === 8 || index === 10) codes[pos++] = 0x2d;
        codes[pos++] = HEX_DIGITS.charCodeAt(byte >> 4);
        codes[pos++] = HEX_DIGITS.charCodeAt(byte & 0x0f);
      }
    }
    keys[k] = String.fromCharCode(...codes);
  }
  return keys;
}

/** The benchmark's conductor names: `conductor-000.example.org`, … */
export function hostNames(count: number, offset = 0): string[] {
  return Array.from({ length: count }, (_, i) => `conductor-${String(i + offset).padStart(3, '0')}.example.org`);
}

/** Writes keys one per line, for the Python side. */
export function writeKeys(path: string, keys: readonly string[]): void {
  writeFileSync(path, `${keys.join('\n')}\n`);
}
