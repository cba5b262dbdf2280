/**
 * Who wrote a dnsmasq file: the names of ironring's host and option files, and the tags in them,
 * carry the writing conductor, so conductors sharing one `dhcp-hostsdir`/`dhcp-optsdir` never
 * confuse each other's entries and each removes or rewrites only its own by name:
 *
 *   dhcp_hostsdir/ironring-<conductor>-aa-bb-cc-dd-ee-ff.conf
 *   dhcp_optsdir/ironring-<conductor>-<uuid>.conf
 *   tag ir-<conductor>-<uuid>-<digest>
 *
 * `<conductor>` is the conductor's host name as a token safe in a file name and a dnsmasq tag. Names
 * are parsed from the end (a MAC or a uuid has a fixed shape), so a token with dashes is never
 * ambiguous. Names of the scheme before (`ironring-<mac>.conf`, `ironring-<uuid>.conf`, tags
 * `ir-<uuid>-<digest>`) parse with a null owner, so they can be migrated.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { InvalidBootInput } from './errors.js';

const TOKEN = /^[a-z0-9][a-z0-9.-]{0,62}$/;
const MAC_PART = '[0-9a-f]{2}(?:-[0-9a-f]{2}){5}';
const UUID_PART = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const HOST_NAME = new RegExp(`^ironring-(?:(.+)-)?(${MAC_PART})\\.conf$`);
const OPTS_NAME = new RegExp(`^ironring-(?:(.+)-)?(${UUID_PART})\\.conf$`);

/**
 * The token of a conductor host name in file names and tags: the name itself when it is already one
 * (lower case letters, digits, dots and dashes, at most 63), otherwise a cleaned prefix plus a
 * digest of the name, so two different host names never share a token.
 */
export function dhcpOwnerToken(hostname: string): string {
  if (hostname === '') throw new InvalidBootInput('dhcpOwner', 'must be the non-empty host name of the conductor');
  if (TOKEN.test(hostname)) return hostname;
  const cleaned = hostname.toLowerCase().replace(/[^a-z0-9.-]+/g, '-').replace(/^[^a-z0-9]+/, '').slice(0, 40);
  const digest = createHash('sha256').update(hostname).digest('hex').slice(0, 8);
  return `${cleaned === '' ? 'h' : cleaned}-${digest}`;
}

/** Checks that `owner` is a token as `dhcpOwnerToken` makes them. */
export function checkOwnerToken(owner: string): string {
  if (!TOKEN.test(owner)) throw new InvalidBootInput('dhcpOwner', `${JSON.stringify(owner)} is not a conductor token (see dhcpOwnerToken)`);
  return owner;
}

/** Path of `owner`'s host file of a MAC (`aa:bb:…`, normalized). */
export function dhcpHostPath(hostsDir: string, owner: string, mac: string): string {
  return join(hostsDir, `ironring-${owner}-${mac.replaceAll(':', '-')}.conf`);
}

/** Path of `owner`'s option file of a node. */
export function dhcpOptsPath(optsDir: string, owner: string, uuid: string): string {
  return join(optsDir, `ironring-${owner}-${uuid}.conf`);
}

/** The tag of `owner`'s entries of node `uuid` for options digesting to `digest`. */
export function dhcpTag(owner: string, uuid: string, digest: string): string {
  return `ir-${owner}-${uuid}-${digest}`;
}

/** What a host line of `owner` for node `uuid` contains (`,set:<tag>` of any digest); null owner: the old scheme. */
export function tagPrefix(owner: string | null, uuid: string): string {
  return owner === null ? `,set:ir-${uuid}-` : `,set:ir-${owner}-${uuid}-`;
}

/** A host file name parsed: its MAC (`aa:bb:…`) and writer (null: the old, unprefixed scheme). */
export interface HostFileName {
  owner: string | null;
  mac: string;
}

/** A file name of `dhcp_hostsdir` parsed, or null when it is not ironring's. */
export function parseHostFileName(name: string): HostFileName | null {
  const m = HOST_NAME.exec(name);
  return m ? { owner: m[1] ?? null, mac: m[2]!.replaceAll('-', ':') } : null;
}

/** An option file name parsed: its node and writer (null: the old, unprefixed scheme). */
export interface OptsFileName {
  owner: string | null;
  uuid: string;
}

/** A file name of `dhcp_optsdir` parsed, or null when it is not ironring's. */
export function parseOptsFileName(name: string): OptsFileName | null {
  const m = OPTS_NAME.exec(name);
  return m ? { owner: m[1] ?? null, uuid: m[2]! } : null;
}

/** The node uuid a host line of `owner` points at (from its tag), or null. */
export function hostLineNode(content: string, owner: string | null): string | null {
  const head = owner === null ? ',set:ir-' : `,set:ir-${owner}-`;
  const at = content.indexOf(head);
  if (at < 0) return null;
  const m = new RegExp(`^(${UUID_PART})-[0-9a-f]{8}(?:,|\\s|$)`).exec(content.slice(at + head.length));
  return m ? m[1]! : null;
}
