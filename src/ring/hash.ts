/**
 * The non-cryptographic hashing behind the balanced ring: MurmurHash3 (x86, 32-bit) of a key's
 * UTF-8 bytes, and a 32-bit integer mixer for deriving a host's points.
 *
 * Pure JavaScript on purpose: the ring's constructor is synchronous, so a WebAssembly hash with an
 * asynchronous initialisation (xxhash-wasm) cannot be used, and MurmurHash3 over `charCodeAt` runs
 * at tens of millions of UUID-sized keys per second here (see docs/ring.md). It is a published,
 * widely implemented function, so another language can reproduce the placements.
 */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

const encoder = new TextEncoder();

/**
 * MurmurHash3_x86_32 of the UTF-8 encoding of `key`, as an unsigned 32-bit integer.
 *
 * ASCII keys (node UUIDs, host names) are hashed straight from the string's code units, which is
 * the same byte sequence UTF-8 would produce; anything else is encoded first.
 */
export function murmur3(key: string, seed = 0): number {
  const length = key.length;
  const blocks = length & ~3;
  let h = seed | 0;
  let i = 0;
  for (; i < blocks; i += 4) {
    const a = key.charCodeAt(i);
    const b = key.charCodeAt(i + 1);
    const c = key.charCodeAt(i + 2);
    const d = key.charCodeAt(i + 3);
    if ((a | b | c | d) > 0x7f) return murmur3Bytes(encoder.encode(key), seed);
    let k = a | (b << 8) | (c << 16) | (d << 24);
    k = Math.imul(k, C1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, C2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  if (i < length) {
    // The 1–3 trailing bytes, little-endian, as the reference implementation reads its tail.
    let k = 0;
    for (let j = length - 1; j >= i; j--) {
      const c = key.charCodeAt(j);
      if (c > 0x7f) return murmur3Bytes(encoder.encode(key), seed);
      k = (k << 8) | c;
    }
    h ^= Math.imul((Math.imul(k, C1) << 15) | (Math.imul(k, C1) >>> 17), C2);
  }
  return finish(h, length);
}

/** MurmurHash3_x86_32 of a byte array, as an unsigned 32-bit integer. */
export function murmur3Bytes(bytes: Uint8Array, seed = 0): number {
  const length = bytes.length;
  const blocks = length & ~3;
  let h = seed | 0;
  let i = 0;
  for (; i < blocks; i += 4) {
    let k = bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24);
    k = Math.imul(k, C1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, C2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  if (i < length) {
    let k = 0;
    for (let j = length - 1; j >= i; j--) k = (k << 8) | bytes[j]!;
    h ^= Math.imul((Math.imul(k, C1) << 15) | (Math.imul(k, C1) >>> 17), C2);
  }
  return finish(h, length);
}

function finish(hash: number, length: number): number {
  let h = hash ^ length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * A bijective 32-bit mixer with low bias ("lowbias32", from Chris Wellons' hash-prospector):
 * consecutive inputs give unrelated outputs, which is what deriving many points per host needs.
 */
export function mix32(value: number): number {
  let x = value | 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d);
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b);
  x ^= x >>> 16;
  return x >>> 0;
}
