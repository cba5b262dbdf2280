/**
 * The DHCP (RFC 2131/2132) packet codec of the ProxyDHCP responder: bytes to a plain packet value
 * and back. Our own, small and bounds-checked: the one npm library (`dhcp`) is a whole server with
 * an unpinned dependency and no types. Only what a ProxyDHCP needs is interpreted; every option is
 * kept as raw bytes.
 *
 * - A packet is at most {@link MAX_PACKET} bytes (an Ethernet MTU) and at least the 236-byte fixed
 *   header plus the magic cookie; every option length is checked against the bytes left.
 * - Options 0 (pad) and 255 (end) are framing, not values; bytes after the end option are padding.
 * - A code that occurs more than once is concatenated in order (RFC 3396); encoding splits values
 *   longer than 255 bytes into consecutive options of the same code, so long values round-trip.
 * - Option overload (52) is not followed: `sname` and `file` stay raw 64/128-byte fields. PXE clients
 *   do not overload, and a responder that needs neither field's options loses nothing.
 */

/** The largest packet parsed or encoded (bytes). */
export const MAX_PACKET = 1500;
/** The fixed BOOTP header before the magic cookie. */
const HEADER = 236;
/** RFC 2131: the first four bytes of the options field. */
const MAGIC = [99, 130, 83, 99] as const;
/** BOOTP relay agents and some PXE ROMs drop datagrams shorter than a BOOTP packet: pad to it. */
const MIN_ENCODED = 300;

/** Message types (option 53) this codec names. */
export const DHCP_MESSAGE = { DISCOVER: 1, OFFER: 2, REQUEST: 3, DECLINE: 4, ACK: 5, NAK: 6, RELEASE: 7, INFORM: 8 } as const;

/** Option codes the responder reads or writes. */
export const OPTION = {
  MESSAGE_TYPE: 53,
  SERVER_ID: 54,
  VENDOR_CLASS: 60,
  TFTP_SERVER: 66,
  BOOTFILE: 67,
  USER_CLASS: 77,
  CLIENT_ARCH: 93,
  CLIENT_NDI: 94,
  CLIENT_UUID: 97,
  VENDOR_SPECIFIC: 43,
  IPXE_ENCAP: 175,
} as const;

/** One DHCP message. Addresses are dotted IPv4 strings; `sname` and `file` are the raw fields. */
export interface DhcpPacket {
  /** 1 BOOTREQUEST, 2 BOOTREPLY. */
  op: number;
  htype: number;
  hlen: number;
  hops: number;
  /** Transaction id, echoed in replies. */
  xid: number;
  secs: number;
  /** Bit 15 (0x8000) is the broadcast flag. */
  flags: number;
  ciaddr: string;
  yiaddr: string;
  siaddr: string;
  giaddr: string;
  /** The 16-byte client hardware address field (the MAC is its first `hlen` bytes). */
  chaddr: Buffer;
  /** 64 bytes. */
  sname: Buffer;
  /** 128 bytes. */
  file: Buffer;
  /** Options in order of first appearance, without pad and end; values of repeated codes concatenated. */
  options: Map<number, Buffer>;
}

/** Thrown by {@link parseDhcp} for bytes that are not a well-formed DHCP packet; `field` names where. */
export class DhcpDecodeError extends Error {
  override readonly name = 'DhcpDecodeError';
  constructor(
    /** What was wrong: `length`, `cookie`, `hlen`, `option 61`… */
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** Thrown by {@link encodeDhcp} for a packet value that cannot be put on the wire. */
export class DhcpEncodeError extends Error {
  override readonly name = 'DhcpEncodeError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

function readIp(buf: Buffer, at: number): string {
  return `${buf[at]}.${buf[at + 1]}.${buf[at + 2]}.${buf[at + 3]}`;
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** The four bytes of a dotted IPv4 address; throws `DhcpEncodeError` naming `field` otherwise. */
export function ipBytes(ip: string, field: string): Buffer {
  const m = IPV4.exec(ip);
  const parts = m ? m.slice(1).map(Number) : [];
  if (parts.length !== 4 || parts.some((p) => p > 255)) throw new DhcpEncodeError(field, `${JSON.stringify(ip)} is not an IPv4 address`);
  return Buffer.from(parts);
}

/** Parses one datagram. Throws only `DhcpDecodeError`. */
export function parseDhcp(data: Uint8Array): DhcpPacket {
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (buf.length > MAX_PACKET) throw new DhcpDecodeError('length', `${buf.length} bytes is more than ${MAX_PACKET}`);
  if (buf.length < HEADER + MAGIC.length) throw new DhcpDecodeError('length', `${buf.length} bytes is less than the ${HEADER + MAGIC.length} of a DHCP header`);
  if (MAGIC.some((b, i) => buf[HEADER + i] !== b)) throw new DhcpDecodeError('cookie', 'the DHCP magic cookie is missing');
  const hlen = buf[2]!;
  if (hlen > 16) throw new DhcpDecodeError('hlen', `${hlen} is more than the 16 bytes of chaddr`);
  const options = new Map<number, Buffer>();
  let at = HEADER + MAGIC.length;
  while (at < buf.length) {
    const code = buf[at]!;
    if (code === 0) {
      at += 1;
      continue;
    }
    if (code === 255) break;
    if (at + 1 >= buf.length) throw new DhcpDecodeError(`option ${code}`, 'has no length byte');
    const len = buf[at + 1]!;
    if (at + 2 + len > buf.length) throw new DhcpDecodeError(`option ${code}`, `length ${len} runs past the end of the packet`);
    const value = Buffer.from(buf.subarray(at + 2, at + 2 + len));
    const earlier = options.get(code);
    options.set(code, earlier === undefined ? value : Buffer.concat([earlier, value]));
    at += 2 + len;
  }
  return {
    op: buf[0]!,
    htype: buf[1]!,
    hlen,
    hops: buf[3]!,
    xid: buf.readUInt32BE(4),
    secs: buf.readUInt16BE(8),
    flags: buf.readUInt16BE(10),
    ciaddr: readIp(buf, 12),
    yiaddr: readIp(buf, 16),
    siaddr: readIp(buf, 20),
    giaddr: readIp(buf, 24),
    chaddr: Buffer.from(buf.subarray(28, 44)),
    sname: Buffer.from(buf.subarray(44, 108)),
    file: Buffer.from(buf.subarray(108, 236)),
    options,
  };
}

function checkByte(value: number, field: string, max = 255): number {
  if (!Number.isInteger(value) || value < 0 || value > max) throw new DhcpEncodeError(field, `${value} is not an integer 0–${max}`);
  return value;
}

function fixed(value: Buffer, size: number, field: string): Buffer {
  if (value.length !== size) throw new DhcpEncodeError(field, `must be ${size} bytes, not ${value.length}`);
  return value;
}

/** Encodes a packet (options in map order, end option, zero padding to 300 bytes). Throws `DhcpEncodeError`. */
export function encodeDhcp(packet: DhcpPacket): Buffer {
  const head = Buffer.alloc(HEADER);
  head[0] = checkByte(packet.op, 'op');
  head[1] = checkByte(packet.htype, 'htype');
  head[2] = checkByte(packet.hlen, 'hlen', 16);
  head[3] = checkByte(packet.hops, 'hops');
  head.writeUInt32BE(checkByte(packet.xid, 'xid', 0xffffffff), 4);
  head.writeUInt16BE(checkByte(packet.secs, 'secs', 0xffff), 8);
  head.writeUInt16BE(checkByte(packet.flags, 'flags', 0xffff), 10);
  ipBytes(packet.ciaddr, 'ciaddr').copy(head, 12);
  ipBytes(packet.yiaddr, 'yiaddr').copy(head, 16);
  ipBytes(packet.siaddr, 'siaddr').copy(head, 20);
  ipBytes(packet.giaddr, 'giaddr').copy(head, 24);
  fixed(packet.chaddr, 16, 'chaddr').copy(head, 28);
  fixed(packet.sname, 64, 'sname').copy(head, 44);
  fixed(packet.file, 128, 'file').copy(head, 108);
  const parts: Buffer[] = [head, Buffer.from(MAGIC)];
  for (const [code, value] of packet.options) {
    if (!Number.isInteger(code) || code < 1 || code > 254) throw new DhcpEncodeError(`option ${code}`, 'codes are 1–254 (0 and 255 are pad and end)');
    // An empty value is one option of length 0; a long one is split into 255-byte pieces (RFC 3396).
    for (let at = 0; at === 0 || at < value.length; at += 255) {
      const piece = value.subarray(at, at + 255);
      parts.push(Buffer.from([code, piece.length]), piece);
    }
  }
  parts.push(Buffer.from([255]));
  let out = Buffer.concat(parts);
  if (out.length > MAX_PACKET) throw new DhcpEncodeError('options', `the packet would be ${out.length} bytes, more than ${MAX_PACKET}`);
  if (out.length < MIN_ENCODED) out = Buffer.concat([out, Buffer.alloc(MIN_ENCODED - out.length)]);
  return out;
}

/** The MAC of an Ethernet client (`aa:bb:cc:dd:ee:ff`), or null for other hardware types. */
export function clientMac(packet: DhcpPacket): string | null {
  if (packet.htype !== 1 || packet.hlen !== 6) return null;
  return [...packet.chaddr.subarray(0, 6)].map((b) => b.toString(16).padStart(2, '0')).join(':');
}

/** A fixed-size field holding `text` NUL-terminated, or null when it does not fit. */
export function textField(text: string, size: 64 | 128): Buffer | null {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length >= size) return null;
  const out = Buffer.alloc(size);
  bytes.copy(out);
  return out;
}
