/**
 * What the ProxyDHCP responder answers to one request, decided without I/O: the PXE specification's
 * proxyDHCP (PXE 2.1 §2.2–2.4, RFC 4578) as Tinkerbell's Smee and dnsmasq's `dhcp-range=…,proxy` do
 * it. Boot information only — next-server, boot file by client architecture, or `boot.ipxe` over
 * HTTP for iPXE itself — never an address or lease option: addresses stay with the site's DHCP server.
 *
 * - Port 67: a PXE client's DHCPDISCOVER gets a DHCPOFFER; a DHCPREQUEST naming this server (option
 *   54) gets a DHCPACK. A DHCPREQUEST for another server is the client taking its lease: not ours.
 * - Port 4011: the client's boot server request (DHCPREQUEST, unicast from its new address) gets a
 *   DHCPACK with the same boot information, sent back where it came from.
 * - Only MACs the conductor serves (its `OwnedMacs`, or an unknown machine's discovery entry the
 *   caller's lookup returns) and only clients whose vendor class starts with `PXEClient` are
 *   answered; everything else is ignored, with the reason.
 */
import { isIPv4 } from 'node:net';
import type { DhcpBootFiles } from '../dhcp.js';
import { BOOT_IPXE_NAME } from '../layout.js';
import type { BootInterface } from '../types.js';
import { clientMac, DHCP_MESSAGE, OPTION, textField } from './codec.js';
import type { DhcpPacket } from './codec.js';
import type { ServedBoot } from './owned-macs.js';

/** Boot files for 64-bit ARM EFI clients (option 93 = 11), which `DhcpBootFiles` has none for. */
export interface Arm64BootFiles {
  /** PXE, arm64 UEFI: the GRUB network image. Default `grubaa64.efi`. */
  pxe: string;
  /** iPXE, arm64 UEFI: the iPXE chain loader. Default `snponly-arm64.efi`. */
  ipxe: string;
}

export const DEFAULT_ARM64_BOOT_FILES: Arm64BootFiles = { pxe: 'grubaa64.efi', ipxe: 'snponly-arm64.efi' };

/** What every answer carries. */
export interface AnswerSettings {
  /** IPv4 address of this responder as clients reach it: option 54 (server identifier). */
  serverAddress: string;
  /** TFTP server host for siaddr (next-server) and option 66; default `serverAddress`. IPv4 for siaddr. */
  tftpHost?: string;
  /** Base URL of the HTTP boot server; iPXE clients of iPXE nodes get `<httpUrl>/boot.ipxe`. */
  httpUrl?: string;
  bootFiles: DhcpBootFiles;
  arm64Files: Arm64BootFiles;
}

/** The port a request came in on: 67 (`dhcp`) or 4011 (`pxe`, the boot server port). */
export type RequestPort = 'dhcp' | 'pxe';

export type Decision = { kind: 'offer' | 'ack'; reply: DhcpPacket; bootFile: string; node: ServedBoot } | { kind: 'ignored'; reason: string };

/** Client system architectures (RFC 4578 option 93) answered, by the boot files they need. */
const ARCHES: Record<number, 'bios' | 'uefi' | 'arm64'> = { 0: 'bios', 6: 'uefi', 7: 'uefi', 9: 'uefi', 11: 'arm64' };

/** PXE 2.1 vendor option 43: PXE_DISCOVERY_CONTROL (6) = 8, "boot file in this offer, no boot server discovery". */
const PXE_VENDOR_OPTIONS = Buffer.from([6, 1, 8, 255]);

const ZERO_IP = '0.0.0.0';

/** The reason given for a PXE client whose MAC the lookup does not know. */
export const NOT_SERVED = 'MAC not served here';

/** True for iPXE's own DHCP (user class 77 "iPXE", or its encapsulated options 175). */
export function isIpxeClient(request: DhcpPacket): boolean {
  const userClass = request.options.get(OPTION.USER_CLASS);
  return request.options.has(OPTION.IPXE_ENCAP) || (userClass !== undefined && userClass.toString('latin1').includes('iPXE'));
}

/** The boot file for a client of this architecture booting a node with this interface, or null for an architecture not served. */
export function bootFileFor(arch: number, iface: BootInterface, settings: Pick<AnswerSettings, 'bootFiles' | 'arm64Files'>): string | null {
  const kind = ARCHES[arch];
  if (kind === undefined) return null;
  const { bootFiles, arm64Files } = settings;
  if (iface === 'ipxe') return kind === 'bios' ? bootFiles.ipxeBios : kind === 'uefi' ? bootFiles.ipxeUefi : arm64Files.ipxe;
  return kind === 'bios' ? bootFiles.pxeBios : kind === 'uefi' ? bootFiles.pxeUefi : arm64Files.pxe;
}

function ignored(reason: string): Decision {
  return { kind: 'ignored', reason };
}

/** Decides the answer to `request` received on `port`; `lookup` says which node a MAC boots as here. */
export function answer(request: DhcpPacket, port: RequestPort, lookup: (mac: string) => ServedBoot | undefined, settings: AnswerSettings): Decision {
  if (request.op !== 1) return ignored('not a BOOTREQUEST');
  const type = request.options.get(OPTION.MESSAGE_TYPE);
  if (type?.length !== 1) return ignored('no message type');
  const messageType = type[0]!;
  let kind: 'offer' | 'ack';
  if (port === 'dhcp' && messageType === DHCP_MESSAGE.DISCOVER) {
    kind = 'offer';
  } else if (messageType === DHCP_MESSAGE.REQUEST) {
    // On 67 a DHCPREQUEST usually takes the site server's lease; only one naming us is ours.
    const server = request.options.get(OPTION.SERVER_ID);
    if (port === 'dhcp' && (server?.length !== 4 || [...server].join('.') !== settings.serverAddress)) return ignored('request for another server');
    kind = 'ack';
  } else {
    return ignored(`message type ${messageType}`);
  }
  const vendor = request.options.get(OPTION.VENDOR_CLASS);
  if (vendor === undefined || !vendor.toString('latin1').startsWith('PXEClient')) return ignored('not a PXE client');
  const mac = clientMac(request);
  if (mac === null) return ignored('not an Ethernet client');
  const node = lookup(mac);
  if (node === undefined) return ignored(NOT_SERVED);
  const archOption = request.options.get(OPTION.CLIENT_ARCH);
  // Option 93 lists one or more 16-bit types; the first is the running firmware. Absent: BIOS, as dnsmasq.
  const arch = archOption !== undefined && archOption.length >= 2 ? archOption.readUInt16BE(0) : 0;
  let bootFile: string | null;
  if (isIpxeClient(request) && node.bootInterface === 'ipxe') {
    if (settings.httpUrl === undefined) return ignored('iPXE node but no HTTP boot URL');
    bootFile = `${settings.httpUrl.replace(/\/+$/, '')}/${node.ipxeScript ?? BOOT_IPXE_NAME}`;
  } else {
    bootFile = bootFileFor(arch, node.bootInterface, settings);
    if (bootFile === null) return ignored(`client architecture ${arch} not served`);
  }
  const tftpHost = settings.tftpHost ?? settings.serverAddress;
  const options = new Map<number, Buffer>([
    [OPTION.MESSAGE_TYPE, Buffer.from([kind === 'offer' ? DHCP_MESSAGE.OFFER : DHCP_MESSAGE.ACK])],
    [OPTION.SERVER_ID, Buffer.from(settings.serverAddress.split('.').map(Number))],
    [OPTION.VENDOR_CLASS, Buffer.from('PXEClient')],
  ]);
  const uuid = request.options.get(OPTION.CLIENT_UUID);
  if (uuid !== undefined) options.set(OPTION.CLIENT_UUID, uuid);
  options.set(OPTION.VENDOR_SPECIFIC, PXE_VENDOR_OPTIONS);
  options.set(OPTION.TFTP_SERVER, Buffer.from(tftpHost));
  options.set(OPTION.BOOTFILE, Buffer.from(bootFile));
  const reply: DhcpPacket = {
    op: 2,
    htype: request.htype,
    hlen: request.hlen,
    hops: 0,
    xid: request.xid,
    secs: 0,
    flags: request.flags,
    ciaddr: kind === 'ack' ? request.ciaddr : ZERO_IP,
    yiaddr: ZERO_IP,
    siaddr: isIPv4(tftpHost) ? tftpHost : settings.serverAddress,
    giaddr: request.giaddr,
    chaddr: request.chaddr,
    sname: Buffer.alloc(64),
    // Old PXE ROMs read the file field only; a name too long for it (a URL) is in option 67 alone.
    file: textField(bootFile, 128) ?? Buffer.alloc(128),
    options,
  };
  return { kind, reply, bootFile, node };
}

/** Where a reply goes (RFC 2131 §4.1), given where the request came from. */
export function replyDestination(
  request: DhcpPacket,
  port: RequestPort,
  from: { address: string; port: number },
  ports: { broadcast: string; client: number; relay: number },
): { address: string; port: number } {
  // The boot server request came unicast from the client's own address: answer it there.
  if (port === 'pxe') return from;
  if (request.giaddr !== ZERO_IP) return { address: request.giaddr, port: ports.relay };
  if (request.ciaddr !== ZERO_IP) return { address: request.ciaddr, port: ports.client };
  // No address yet (we assign none): broadcast, whatever the broadcast flag says.
  return { address: ports.broadcast, port: ports.client };
}
