/**
 * Agent tokens: the per-node secret that proves a heartbeat (and, as its digest, a command's
 * caller) belongs to the agent the node's lookup answered. Ironic keeps the token itself in
 * `driver_internal_info`; ironring keeps only its SHA-256 digest, in a column of its own that no
 * view, RPC answer or log line reads, so the token exists in clear only in the lookup's answer and
 * the agent's memory.
 *
 * 32 random bytes are far beyond guessing, so an unsalted fast digest is the right tool (a password
 * hash would only slow every heartbeat down). Comparisons are of fixed-length digests in constant
 * time, and a node without a token is compared against a dummy digest, so a wrong token, a missing
 * one and a right one cost the same.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A new token and the digest to store for it. */
export interface IssuedToken {
  /** URL-safe base64 of 32 random bytes: 43 characters. */
  token: string;
  /** Its SHA-256 digest, hex: what the node row keeps. */
  hash: string;
}

/** The SHA-256 digest of a token, hex (64 characters). */
export function agentTokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Makes a new token. */
export function issueAgentToken(): IssuedToken {
  const token = randomBytes(32).toString('base64url');
  return { token, hash: agentTokenHash(token) };
}

/** Compared against when a node has no token, so that the answer takes as long as a real compare. */
const NO_TOKEN = agentTokenHash('no token has been issued for this node');

const HASH = /^[0-9a-f]{64}$/;

/** True for a string shaped as a stored digest (64 lower-case hex digits). */
export function isAgentTokenHash(value: unknown): value is string {
  return typeof value === 'string' && HASH.test(value);
}

/**
 * True when `presentedHash` (the digest of the token a caller sent) is the node's `storedHash`.
 * False when the node has none, or either is not a digest; every case runs one constant-time
 * comparison of two 32-byte values.
 */
export function agentTokenMatches(presentedHash: string, storedHash: string | null): boolean {
  // Both checked whatever the first says, so that no branch is shorter than another.
  const stored = isAgentTokenHash(storedHash);
  const presented = isAgentTokenHash(presentedHash);
  const usable = stored && presented;
  const a = Buffer.from(usable ? presentedHash : NO_TOKEN, 'hex');
  const b = Buffer.from(usable ? (storedHash as string) : NO_TOKEN, 'hex');
  return timingSafeEqual(a, b) && usable;
}
