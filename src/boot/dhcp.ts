/**
 * dnsmasq host and option files (`dhcp-hostsdir`, `dhcp-optsdir`) that point each pxe-enabled MAC of
 * a node at its owning conductor, in Ironic's format, named and tagged by the writing conductor
 * (`dhcp-names.ts`):
 *
 *   dhcp_hostsdir/ironring-<conductor>-aa-bb-cc-dd-ee-ff.conf  aa:bb:cc:dd:ee:ff,set:<tag>,set:ironring
 *   dhcp_optsdir/ironring-<conductor>-<uuid>.conf              tag:<tag>,option:tftp-server,10.0.0.5 …
 *
 * How dnsmasq reads these (checked with dnsmasq 2.90, see docs/boot.md): new and changed files are
 * read at once, and the host line read **last** for a MAC is the one it answers with; a removed file's
 * lines stay in memory until SIGHUP, and at SIGHUP the files are read in no defined order. Hence:
 *
 * - a changed option set never reuses a tag: the tag carries a digest of the options;
 * - the owner writes its option file, then its host files, then removes every other conductor's
 *   host and option files of the node's MACs and uuid (it is the owner now; in a shared directory
 *   that retires a stopped or dead conductor's entries at once). Its host line is rewritten even
 *   when unchanged if another one was there, so it is the one read last. Others' files are removed,
 *   never rewritten to `ignore`: an `ignore` read after the owner's line would silence the node;
 * - a conductor retires its own host line by rewriting it to `mac,ignore` (as Ironic: this dnsmasq
 *   then stops answering for the MAC, even from a general `dhcp-range`), unless another conductor's
 *   live line for the MAC is there — then its file is removed, leaving that line the last read.
 *   `cleanUp: 'remove'` always removes;
 * - files of the old, unprefixed scheme count as another writer's: the owner removes them when it
 *   writes its own, and retiring them migrates them to this conductor's `ignore` file.
 */
import { createHash } from 'node:crypto';
import { isIPv4 } from 'node:net';
import { join } from 'node:path';
import { readTextOrNull, removeIfPresent, writeFileAtomic, writeFileIfChanged } from './atomic-fs.js';
import type { WriteOptions } from './atomic-fs.js';
import { checkOwnerToken, dhcpHostPath, dhcpOptsPath, dhcpTag, tagPrefix } from './dhcp-names.js';
import { InvalidBootInput } from './errors.js';
import { BOOT_IPXE_NAME } from './layout.js';
import type { BootInterface, BootMode } from './types.js';
import { checkHttpUrl } from './validate.js';

/** Boot files handed to clients that are not (yet) iPXE, per interface and boot mode. */
export interface DhcpBootFiles {
  /** PXE, BIOS: PXELINUX. Default `pxelinux.0`. */
  pxeBios: string;
  /** PXE, UEFI: the GRUB (or shim) network image. Default `bootx64.efi`, as Ironic. */
  pxeUefi: string;
  /** iPXE, BIOS: the iPXE chain loader. Default `undionly.kpxe`. */
  ipxeBios: string;
  /** iPXE, UEFI: the iPXE EFI chain loader. Default `snponly.efi`, as Ironic. */
  ipxeUefi: string;
}

export const DEFAULT_BOOT_FILES: DhcpBootFiles = {
  pxeBios: 'pxelinux.0',
  pxeUefi: 'bootx64.efi',
  ipxeBios: 'undionly.kpxe',
  ipxeUefi: 'snponly.efi',
};

/** Where and how DHCP entries are written. */
export interface DhcpOptions {
  /** dnsmasq `dhcp-hostsdir`. */
  hostsDir: string;
  /** dnsmasq `dhcp-optsdir`. */
  optsDir: string;
  /** The writing conductor's token (`dhcpOwnerToken` of its host name): in file names and tags. */
  owner: string;
  /** This conductor's TFTP server, `host` or `host:port`. DHCP carries only the host: PXE ROMs always use port 69. */
  tftpServer: string;
  /** Base URL of the HTTP boot server; iPXE clients get `<httpUrl>/boot.ipxe`. Required for iPXE nodes. */
  httpUrl?: string;
  bootFiles?: Partial<DhcpBootFiles>;
  /** What retiring leaves for a MAC: `ignore` (default, as Ironic) or `remove` the host file. */
  cleanUp?: 'ignore' | 'remove';
}

/** The entries of one node, rendered. */
export interface DhcpEntries {
  uuid: string;
  owner: string;
  tag: string;
  opts: { path: string; content: string };
  hosts: { mac: string; path: string; content: string }[];
}

/** What writing or retiring entries changed: files written (an `ignore` line counts) and files removed. */
export interface DhcpChanges {
  written: string[];
  removed: string[];
}

/** The host part of `host`, `host:port`, `[v6]:port` or a bare IPv6 address. */
export function tftpHost(server: string): string {
  if (server.startsWith('[')) return server.slice(1, server.indexOf(']'));
  const colons = server.split(':').length - 1;
  return colons === 1 ? server.slice(0, server.indexOf(':')) : server;
}

function checkToken(value: string, field: string): string {
  if (value === '' || /[\s,"#]/.test(value)) throw new InvalidBootInput(field, `${JSON.stringify(value)} must be non-empty, without spaces, commas, quotes or #`);
  return value;
}

/** Renders the host and option files of a node (pure). `macs` are normalized pxe-enabled MACs. */
export function renderDhcpEntries(
  node: { uuid: string; bootMode: BootMode; bootInterface: BootInterface },
  macs: readonly string[],
  options: DhcpOptions,
): DhcpEntries {
  const files = { ...DEFAULT_BOOT_FILES, ...options.bootFiles };
  const owner = checkOwnerToken(options.owner);
  const host = checkToken(tftpHost(options.tftpServer), 'tftpServer');
  const uefi = node.bootMode === 'uefi';
  // Options without the tag first: the tag is a digest of them.
  const body: string[] = [];
  if (isIPv4(host)) body.push(`option:server-ip-address,${host}`);
  body.push(`option:tftp-server,${host}`);
  // Option 150 (Cisco's TFTP server address), which some PXE ROMs read instead of 66; IPv4 only.
  if (isIPv4(host)) body.push(`150,${host}`);
  if (node.bootInterface === 'ipxe') {
    if (options.httpUrl === undefined) throw new InvalidBootInput('httpUrl', 'is required for iPXE nodes');
    const url = checkHttpUrl(options.httpUrl);
    // Needs `dhcp-match=set:ipxe,175` in dnsmasq's config: iPXE sends option 175.
    body.push(`tag:!ipxe,option:bootfile-name,${checkToken(uefi ? files.ipxeUefi : files.ipxeBios, 'bootFiles')}`);
    body.push(`tag:ipxe,option:bootfile-name,${url}/${BOOT_IPXE_NAME}`);
  } else {
    body.push(`option:bootfile-name,${checkToken(uefi ? files.pxeUefi : files.pxeBios, 'bootFiles')}`);
  }
  // iPXE's no-pxedhcp (option 175.176 = 1): this offer carries the boot information, so iPXE takes
  // it at once. Without it iPXE keeps discovering for its ProxyDHCP timeout after a DHCPOFFER with
  // no `PXEClient` in it, and only then requests: 3 s of every iPXE boot (measured with a real VM,
  // issue #16). Any iPXE (a NIC's iPXE ROM under PXELINUX too) asks for option 175; others ignore it.
  body.push('tag:ipxe,encap:175,176,1b');
  const digest = createHash('sha256').update(`${node.uuid}\n${body.join('\n')}`).digest('hex').slice(0, 8);
  const tag = dhcpTag(owner, node.uuid, digest);
  return {
    uuid: node.uuid,
    owner,
    tag,
    opts: { path: dhcpOptsPath(options.optsDir, owner, node.uuid), content: body.map((line) => `tag:${tag},${line}\n`).join('') },
    hosts: macs.map((mac) => ({ mac, path: dhcpHostPath(options.hostsDir, owner, mac), content: `${mac},set:${tag},set:ironring\n` })),
  };
}

/** Path of a MAC's host file in the old, unprefixed scheme. */
function legacyHostPath(hostsDir: string, mac: string): string {
  return join(hostsDir, `ironring-${mac.replaceAll(':', '-')}.conf`);
}

/** Path of a node's option file in the old, unprefixed scheme. */
function legacyOptsPath(optsDir: string, uuid: string): string {
  return join(optsDir, `ironring-${uuid}.conf`);
}

/** True for a host line that makes dnsmasq answer (anything but `mac,ignore`). */
export function isLiveHostLine(content: string): boolean {
  return !/,ignore\s*$/.test(content);
}

/** Host files of `mac` written by anyone but `owner` (other conductors and the old scheme), with their content. */
async function othersHostFiles(hostsDir: string, owner: string, others: readonly string[], mac: string): Promise<Array<{ path: string; content: string }>> {
  const paths = [...others.filter((o) => o !== owner).map((o) => dhcpHostPath(hostsDir, o, mac)), legacyHostPath(hostsDir, mac)];
  const found = await Promise.all(paths.map(async (path) => ({ path, content: await readTextOrNull(path) })));
  return found.filter((f): f is { path: string; content: string } => f.content !== null);
}

/**
 * Writes rendered entries as their node's owner: its option file first (a host line never activates
 * a tag without options), then its host files, then removes the host files other conductors (and the
 * old scheme) have for these MACs and their option files for this node. `others` are the tokens of
 * the other conductors that write into these directories (`listDhcpOwners`).
 */
export async function writeDhcpEntries(entries: DhcpEntries, options: Pick<DhcpOptions, 'hostsDir' | 'optsDir'>, others: readonly string[] = [], write: WriteOptions = {}): Promise<DhcpChanges> {
  const changes: DhcpChanges = { written: [], removed: [] };
  if (await writeFileIfChanged(entries.opts.path, entries.opts.content, write)) changes.written.push(entries.opts.path);
  for (const host of entries.hosts) {
    const theirs = await othersHostFiles(options.hostsDir, entries.owner, others, host.mac);
    if (theirs.length > 0) {
      // dnsmasq answers with the line it read last: ours must come after theirs, changed or not.
      await writeFileAtomic(host.path, host.content, write);
      changes.written.push(host.path);
    } else if (await writeFileIfChanged(host.path, host.content, write)) {
      changes.written.push(host.path);
    }
    for (const other of theirs) if (await removeIfPresent(other.path)) changes.removed.push(other.path);
  }
  const otherOpts = [...others.filter((o) => o !== entries.owner).map((o) => dhcpOptsPath(options.optsDir, o, entries.uuid)), legacyOptsPath(options.optsDir, entries.uuid)];
  for (const path of otherOpts) if (await removeIfPresent(path)) changes.removed.push(path);
  return changes;
}

/**
 * Retires this conductor's host lines of `macs` that still point at node `uuid` (and such lines of
 * the old scheme): each becomes this conductor's `mac,ignore` file, or is removed when `cleanUp` is
 * `remove` or another conductor's live line for the MAC is there (it must stay the last one read).
 * A MAC re-enrolled on another node carries that node's tag now and is left alone.
 */
export async function retireDhcpHosts(uuid: string, macs: readonly string[], options: DhcpOptions, others: readonly string[] = [], write: WriteOptions = {}): Promise<DhcpChanges> {
  const changes: DhcpChanges = { written: [], removed: [] };
  const owner = checkOwnerToken(options.owner);
  for (const mac of macs) {
    const own = dhcpHostPath(options.hostsDir, owner, mac);
    const legacy = legacyHostPath(options.hostsDir, mac);
    const ownContent = await readTextOrNull(own);
    const ownPoints = ownContent !== null && ownContent.includes(tagPrefix(owner, uuid));
    const legacyPoints = ((await readTextOrNull(legacy)) ?? '').includes(tagPrefix(null, uuid));
    if (!ownPoints && !legacyPoints) continue;
    const theirs = (await othersHostFiles(options.hostsDir, owner, others, mac)).filter((f) => f.path !== legacy);
    const remove = options.cleanUp === 'remove' || theirs.some((f) => isLiveHostLine(f.content));
    // Our own file may point at another node that has the MAC now: only a line of this node becomes `ignore`.
    const mayIgnore = ownPoints || ownContent === null || !isLiveHostLine(ownContent);
    if (!remove && mayIgnore && (await writeFileIfChanged(own, `${mac},ignore\n`, write))) changes.written.push(own);
    if (remove && ownPoints && (await removeIfPresent(own))) changes.removed.push(own);
    if (legacyPoints && (await removeIfPresent(legacy))) changes.removed.push(legacy);
  }
  return changes;
}

/** Retires a node's host lines (see `retireDhcpHosts`), then removes its option files (this conductor's and the old scheme's). */
export async function removeDhcpEntries(uuid: string, macs: readonly string[], options: DhcpOptions, others: readonly string[] = [], write: WriteOptions = {}): Promise<DhcpChanges> {
  const changes = await retireDhcpHosts(uuid, macs, options, others, write);
  for (const path of [dhcpOptsPath(options.optsDir, options.owner, uuid), legacyOptsPath(options.optsDir, uuid)]) {
    if (await removeIfPresent(path)) changes.removed.push(path);
  }
  return changes;
}
