/**
 * dnsmasq host and option files (`dhcp-hostsdir`, `dhcp-optsdir`) that point each pxe-enabled MAC of
 * a node at this conductor, in Ironic's format:
 *
 *   dhcp_hostsdir/ironring-aa-bb-cc-dd-ee-ff.conf   aa:bb:cc:dd:ee:ff,set:<tag>,set:ironring
 *   dhcp_optsdir/ironring-<uuid>.conf               tag:<tag>,option:tftp-server,10.0.0.5 …
 *
 * dnsmasq reads new and changed files by itself but only *adds* what it reads until SIGHUP, so a
 * changed option set must not reuse an old tag: the tag is derived from the node uuid and a digest
 * of its options, and changes whenever they do (Ironic uses a fresh random tag per change for the
 * same reason). On clean-up the host line becomes `mac,ignore` (as Ironic does): this dnsmasq then
 * stops answering for the MAC even from a general `dhcp-range`, leaving it to the conductor that owns
 * the node now. `cleanUp: 'remove'` deletes the file instead.
 */
import { createHash } from 'node:crypto';
import { isIPv4 } from 'node:net';
import { join } from 'node:path';
import { readTextOrNull, removeIfPresent, writeFileIfChanged } from './atomic-fs.js';
import type { WriteOptions } from './atomic-fs.js';
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
  /** This conductor's TFTP server, `host` or `host:port`. DHCP carries only the host: PXE ROMs always use port 69. */
  tftpServer: string;
  /** Base URL of the HTTP boot server; iPXE clients get `<httpUrl>/boot.ipxe`. Required for iPXE nodes. */
  httpUrl?: string;
  bootFiles?: Partial<DhcpBootFiles>;
  /** What clean-up leaves for a MAC: `ignore` (default, as Ironic) or `remove` the host file. */
  cleanUp?: 'ignore' | 'remove';
}

/** The entries of one node, rendered. */
export interface DhcpEntries {
  tag: string;
  opts: { path: string; content: string };
  hosts: { mac: string; path: string; content: string }[];
}

/** Path of the host file of a MAC. */
export function dhcpHostPath(hostsDir: string, mac: string): string {
  return join(hostsDir, `ironring-${mac.replaceAll(':', '-')}.conf`);
}

/** Path of the option file of a node. */
export function dhcpOptsPath(optsDir: string, uuid: string): string {
  return join(optsDir, `ironring-${uuid}.conf`);
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
  const digest = createHash('sha256').update(`${node.uuid}\n${body.join('\n')}`).digest('hex').slice(0, 8);
  const tag = `ir-${node.uuid}-${digest}`;
  return {
    tag,
    opts: { path: dhcpOptsPath(options.optsDir, node.uuid), content: body.map((line) => `tag:${tag},${line}\n`).join('') },
    hosts: macs.map((mac) => ({ mac, path: dhcpHostPath(options.hostsDir, mac), content: `${mac},set:${tag},set:ironring\n` })),
  };
}

/** Writes rendered entries (options first, so a host line never activates a tag without options). Returns the paths written. */
export async function writeDhcpEntries(entries: DhcpEntries, write: WriteOptions = {}): Promise<string[]> {
  const written: string[] = [];
  if (await writeFileIfChanged(entries.opts.path, entries.opts.content, write)) written.push(entries.opts.path);
  for (const host of entries.hosts) {
    if (await writeFileIfChanged(host.path, host.content, write)) written.push(host.path);
  }
  return written;
}

/** True when the host file of `mac` holds a tag of node `uuid` (so clean-up of `uuid` may change it). */
export async function hostFileBelongsTo(path: string, uuid: string): Promise<boolean> {
  const content = await readTextOrNull(path);
  return content !== null && content.includes(`,set:ir-${uuid}-`);
}

/**
 * Retires host files of `macs` that still carry a tag of node `uuid`: each becomes `mac,ignore` (or
 * is removed). Returns the paths changed.
 */
export async function retireDhcpHosts(uuid: string, macs: readonly string[], options: DhcpOptions, write: WriteOptions = {}): Promise<string[]> {
  const changed: string[] = [];
  for (const mac of macs) {
    const path = dhcpHostPath(options.hostsDir, mac);
    // A MAC re-enrolled on another node carries that node's tag now: leave it alone.
    if (!(await hostFileBelongsTo(path, uuid))) continue;
    const done = options.cleanUp === 'remove' ? await removeIfPresent(path) : await writeFileIfChanged(path, `${mac},ignore\n`, write);
    if (done) changed.push(path);
  }
  return changed;
}

/** Retires a node's host files (see `retireDhcpHosts`), then removes its option file. Returns the paths changed. */
export async function removeDhcpEntries(uuid: string, macs: readonly string[], options: DhcpOptions, write: WriteOptions = {}): Promise<string[]> {
  const changed = await retireDhcpHosts(uuid, macs, options, write);
  const opts = dhcpOptsPath(options.optsDir, uuid);
  if (await removeIfPresent(opts)) changed.push(opts);
  return changed;
}
