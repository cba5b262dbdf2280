/**
 * SHA-crypt (Ulrich Drepper's "Unix crypt using SHA-256 and SHA-512", the `$5$`/`$6$` hashes of
 * glibc's crypt(3)): how Ironic stores a rescue password (`[conductor]
 * rescue_password_hash_algorithm`, default sha256) and what the rescue ramdisk's login checks.
 * Node's crypto has the digests but not this construction, so it is written out here; test
 * vectors from OpenSSL's `openssl passwd -5/-6` check it (test/common/sha-crypt.test.ts).
 */
import { createHash, randomBytes } from 'node:crypto';

export const SHA_CRYPT_ALGORITHMS = ['sha256', 'sha512'] as const;
export type ShaCryptAlgorithm = (typeof SHA_CRYPT_ALGORITHMS)[number];

const ALPHABET = './0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const DEFAULT_ROUNDS = 5000;

/** The order in which the final digest's bytes are encoded, three at a time (the spec's tables). */
function byteOrder(algorithm: ShaCryptAlgorithm): number[][] {
  const groups: number[][] = [];
  if (algorithm === 'sha256') {
    for (let i = 0; i < 10; i++) {
      const [a, b, c] = [i, i + 10, i + 20];
      groups.push(i % 3 === 0 ? [a, b, c] : i % 3 === 1 ? [c, a, b] : [b, c, a]);
    }
    groups.push([31, 30]);
  } else {
    for (let i = 0; i < 21; i++) {
      const [a, b, c] = [i, i + 21, i + 42];
      groups.push(i % 3 === 0 ? [a, b, c] : i % 3 === 1 ? [b, c, a] : [c, a, b]);
    }
    groups.push([63]);
  }
  return groups;
}

function encode(digest: Buffer, algorithm: ShaCryptAlgorithm): string {
  let out = '';
  for (const group of byteOrder(algorithm)) {
    // Three bytes make four characters; the last group has fewer bytes and characters.
    let value = 0;
    for (const index of group) value = (value << 8) | digest[index]!;
    for (let n = 0; n < group.length + 1; n++) {
      out += ALPHABET[value & 0x3f];
      value >>>= 6;
    }
  }
  return out;
}

/** `source` repeated to `length` bytes. */
function stretch(source: Buffer, length: number): Buffer {
  const out = Buffer.alloc(length);
  for (let i = 0; i < length; i += source.length) source.copy(out, i, 0, Math.min(source.length, length - i));
  return out;
}

/**
 * The crypt hash of `password`: `$5$salt$…` (sha256) or `$6$salt$…` (sha512); a random 16-character
 * salt unless one is given (at most 16 characters of `./0-9A-Za-z` are used); 5000 rounds unless
 * `rounds` says otherwise (then written as `rounds=N$`).
 */
export function shaCrypt(password: string, algorithm: ShaCryptAlgorithm = 'sha256', options: { salt?: string; rounds?: number } = {}): string {
  const hash = algorithm === 'sha256' ? 'sha256' : 'sha512';
  const size = algorithm === 'sha256' ? 32 : 64;
  const H = (...parts: Buffer[]) => {
    const h = createHash(hash);
    for (const p of parts) h.update(p);
    return h.digest();
  };
  const saltText = (options.salt ?? [...randomBytes(16)].map((b) => ALPHABET[b & 0x3f]).join('')).slice(0, 16);
  if (!/^[./0-9A-Za-z]*$/.test(saltText)) throw new Error('salt: only ./0-9A-Za-z');
  const rounds = options.rounds === undefined ? DEFAULT_ROUNDS : Math.min(999_999_999, Math.max(1000, Math.floor(options.rounds)));
  const P = Buffer.from(password, 'utf8');
  const S = Buffer.from(saltText, 'ascii');

  const B = H(P, S, P);
  const a = createHash(hash).update(P).update(S).update(stretch(B, P.length));
  for (let n = P.length; n > 0; n >>= 1) a.update(n & 1 ? B : P);
  const A = a.digest();
  const dp = createHash(hash);
  for (let i = 0; i < P.length; i++) dp.update(P);
  const Pseq = stretch(dp.digest(), P.length);
  const ds = createHash(hash);
  for (let i = 0; i < 16 + A[0]!; i++) ds.update(S);
  const Sseq = stretch(ds.digest(), S.length);

  let C = A;
  for (let i = 0; i < rounds; i++) {
    const h = createHash(hash);
    h.update(i & 1 ? Pseq : C);
    if (i % 3 !== 0) h.update(Sseq);
    if (i % 7 !== 0) h.update(Pseq);
    h.update(i & 1 ? C : Pseq);
    C = h.digest();
  }
  if (C.length !== size) throw new Error('unexpected digest size');
  const prefix = algorithm === 'sha256' ? '$5$' : '$6$';
  return `${prefix}${options.rounds === undefined ? '' : `rounds=${rounds}$`}${saltText}$${encode(C, algorithm)}`;
}
