/**
 * MD5 (RFC 1321) of a string's UTF-8 bytes, in pure JavaScript, for tooz-mode lookups.
 *
 * Why not `node:crypto`: a lookup hashes one short key (a 36-character UUID), and the per-call cost
 * of crossing into OpenSSL (≈ 2 µs here, measured in docs/ring.md) is many times the cost of the
 * 64 rounds themselves; tooz mode could not then outrun tooz. A key of up to 55 ASCII characters
 * is one MD5 block, hashed straight from its code units with no allocation.
 */

/** Per-round additive constants: floor(|sin(i + 1)| · 2^32). */
const K = Int32Array.from({ length: 64 }, (_, i) => Math.floor(Math.abs(Math.sin(i + 1)) * 2 ** 32) | 0);
/** Per-round left-rotation amounts. */
const S = Int8Array.from([
  7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 4, 11,
  16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
]);
/** Message word used by each round. */
const G = Int8Array.from({ length: 64 }, (_, i) => (i < 16 ? i : i < 32 ? (5 * i + 1) % 16 : i < 48 ? (3 * i + 5) % 16 : (7 * i) % 16));

const block = new Int32Array(16);
const state = new Int32Array(4);
const encoder = new TextEncoder();

/**
 * Writes md5(UTF-8 of `key`) into `out` as four 32-bit words of the 128-bit big-endian number
 * (out[0] most significant), the way tooz reads the digest with `int(hexdigest, 16)`.
 */
export function md5Words(key: string, out: Uint32Array): void {
  const length = key.length;
  let ascii = length <= 55;
  if (ascii) {
    block.fill(0);
    for (let i = 0; i < length; i++) {
      const c = key.charCodeAt(i);
      if (c > 0x7f) {
        ascii = false;
        break;
      }
      block[i >> 2]! |= c << ((i & 3) << 3);
    }
  }
  if (ascii) {
    block[length >> 2]! |= 0x80 << ((length & 3) << 3);
    block[14] = length << 3;
    initState();
    compress();
  } else {
    hashBytes(encoder.encode(key));
  }
  out[0] = swap(state[0]!);
  out[1] = swap(state[1]!);
  out[2] = swap(state[2]!);
  out[3] = swap(state[3]!);
}

/** md5 of arbitrary bytes into `state`, with the standard padding and length suffix. */
function hashBytes(bytes: Uint8Array): void {
  const padded = new Uint8Array((((bytes.length + 8) >> 6) + 1) << 6);
  padded.set(bytes);
  padded[bytes.length] = 0x80;
  const view = new DataView(padded.buffer);
  // Bit length as a 64-bit little-endian integer; strings here are far below 2^29 bytes.
  view.setUint32(padded.length - 8, (bytes.length << 3) >>> 0, true);
  view.setUint32(padded.length - 4, Math.floor(bytes.length / 2 ** 29), true);
  initState();
  for (let offset = 0; offset < padded.length; offset += 64) {
    for (let w = 0; w < 16; w++) block[w] = view.getInt32(offset + w * 4, true);
    compress();
  }
}

function initState(): void {
  state[0] = 0x67452301;
  state[1] = 0xefcdab89 | 0;
  state[2] = 0x98badcfe | 0;
  state[3] = 0x10325476;
}

/** One MD5 compression of `block` into `state`. */
function compress(): void {
  const a0 = state[0]!;
  const b0 = state[1]!;
  const c0 = state[2]!;
  const d0 = state[3]!;
  let a = a0;
  let b = b0;
  let c = c0;
  let d = d0;
  for (let i = 0; i < 64; i++) {
    let f: number;
    if (i < 16) f = (b & c) | (~b & d);
    else if (i < 32) f = (d & b) | (~d & c);
    else if (i < 48) f = b ^ c ^ d;
    else f = c ^ (b | ~d);
    const sum = (a + f + K[i]! + block[G[i]!]!) | 0;
    const s = S[i]!;
    a = d;
    d = c;
    c = b;
    b = (b + ((sum << s) | (sum >>> (32 - s)))) | 0;
  }
  state[0] = (a0 + a) | 0;
  state[1] = (b0 + b) | 0;
  state[2] = (c0 + c) | 0;
  state[3] = (d0 + d) | 0;
}

/** The state words are little-endian in the digest; tooz reads the digest big-endian. */
function swap(x: number): number {
  return (((x & 0xff) << 24) | ((x & 0xff00) << 8) | ((x >>> 8) & 0xff00) | (x >>> 24)) >>> 0;
}
