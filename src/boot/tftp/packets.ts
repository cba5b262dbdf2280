/**
 * TFTP packet codec (RFC 1350, option extension RFC 2347). Every datagram is validated here, at
 * the edge: a parse returns either a typed packet or a reason, never throws, so a hostile or
 * broken peer can only ever earn itself an error packet.
 */

/** Opcodes on the wire (RFC 1350 §5, OACK from RFC 2347). */
export const OPCODES = { RRQ: 1, WRQ: 2, DATA: 3, ACK: 4, ERROR: 5, OACK: 6 } as const;

/** TFTP error codes (RFC 1350 appendix, 8 from RFC 2347). */
export const ERROR_CODES = {
  NOT_DEFINED: 0,
  FILE_NOT_FOUND: 1,
  ACCESS_VIOLATION: 2,
  DISK_FULL: 3,
  ILLEGAL_OPERATION: 4,
  UNKNOWN_TID: 5,
  FILE_EXISTS: 6,
  NO_SUCH_USER: 7,
  OPTION_NEGOTIATION: 8,
} as const;
export type TftpErrorCode = (typeof ERROR_CODES)[keyof typeof ERROR_CODES];

/** Transfer modes of RFC 1350; `mail` is obsolete and refused. */
export const MODES = ['netascii', 'octet', 'mail'] as const;
export type TransferMode = (typeof MODES)[number];

/** A read or write request with its options (names lower-cased, first occurrence wins). */
export interface RequestPacket {
  kind: 'RRQ' | 'WRQ';
  filename: string;
  mode: TransferMode;
  options: ReadonlyMap<string, string>;
}

/** An acknowledgement of a 16-bit block number. */
export interface AckPacket {
  kind: 'ACK';
  block: number;
}

/** An error sent by the peer (which ends the transfer on its side). */
export interface ErrorPacket {
  kind: 'ERROR';
  code: number;
  message: string;
}

/** Packets a read-only server may receive and act on; DATA and OACK are only ever sent by us. */
export type IncomingPacket = RequestPacket | AckPacket | ErrorPacket;

/** Why a datagram was rejected; `code` is the error to answer with. */
export interface PacketFault {
  kind: 'fault';
  code: TftpErrorCode;
  reason: string;
  /** The opcode, when the datagram had one: an ERROR must never be answered with an ERROR. */
  opcode?: number;
}

/** The longest filename we accept; PXE firmware paths are far shorter and this bounds lookups. */
const MAX_FILENAME = 1024;

function fault(reason: string, opcode?: number, code: TftpErrorCode = ERROR_CODES.ILLEGAL_OPERATION): PacketFault {
  return opcode === undefined ? { kind: 'fault', code, reason } : { kind: 'fault', code, reason, opcode };
}

/**
 * Splits the NUL-terminated strings after the opcode. Returns null when the last one is not
 * terminated (a truncated or padded packet), so no field is ever read past the datagram.
 */
function nulStrings(buf: Buffer, start: number): string[] | null {
  const out: string[] = [];
  let from = start;
  while (from < buf.length) {
    const end = buf.indexOf(0, from);
    if (end < 0) return null;
    out.push(buf.toString('utf8', from, end));
    from = end + 1;
  }
  return out;
}

function parseRequest(buf: Buffer, opcode: 1 | 2): RequestPacket | PacketFault {
  const fields = nulStrings(buf, 2);
  if (!fields) return fault('request field not NUL-terminated', opcode);
  const [filename, rawMode, ...rest] = fields;
  if (filename === undefined || rawMode === undefined) return fault('request without filename and mode', opcode);
  if (filename.length === 0) return fault('empty filename', opcode);
  if (filename.length > MAX_FILENAME) return fault('filename too long', opcode);
  const mode = rawMode.toLowerCase();
  if (!(MODES as readonly string[]).includes(mode)) return fault(`unknown transfer mode "${rawMode.slice(0, 32)}"`, opcode);
  // Some clients pad the request with trailing NULs; empty fields at the end are not options.
  while (rest.length > 0 && rest[rest.length - 1] === '') rest.pop();
  if (rest.length % 2 !== 0) return fault('option without a value', opcode, ERROR_CODES.OPTION_NEGOTIATION);
  const options = new Map<string, string>();
  for (let i = 0; i < rest.length; i += 2) {
    const name = rest[i]!.toLowerCase();
    if (name.length === 0) return fault('empty option name', opcode, ERROR_CODES.OPTION_NEGOTIATION);
    if (!options.has(name)) options.set(name, rest[i + 1]!);
  }
  return { kind: opcode === 1 ? 'RRQ' : 'WRQ', filename, mode: mode as TransferMode, options };
}

/** Decodes one datagram received by the server (listener or transfer socket). */
export function parsePacket(buf: Buffer): IncomingPacket | PacketFault {
  if (buf.length < 2) return fault('datagram shorter than an opcode');
  const opcode = buf.readUInt16BE(0);
  switch (opcode) {
    case OPCODES.RRQ:
    case OPCODES.WRQ:
      return parseRequest(buf, opcode);
    case OPCODES.ACK:
      if (buf.length < 4) return fault('truncated ACK', opcode);
      return { kind: 'ACK', block: buf.readUInt16BE(2) };
    case OPCODES.ERROR: {
      if (buf.length < 4) return fault('truncated ERROR', opcode);
      const end = buf.indexOf(0, 4);
      const message = buf.toString('utf8', 4, end < 0 ? buf.length : end).slice(0, 256);
      return { kind: 'ERROR', code: buf.readUInt16BE(2), message };
    }
    case OPCODES.DATA:
    case OPCODES.OACK:
      return fault(`opcode ${opcode} is not accepted by a read-only server`, opcode);
    default:
      return fault(`unknown opcode ${opcode}`, opcode);
  }
}

/** Encodes an ERROR packet; the message is ASCII-only so it is safe for any client to print. */
export function encodeError(code: TftpErrorCode, message: string): Buffer {
  const text = Buffer.from(message.replace(/[^\x20-\x7e]/g, '?').slice(0, 200), 'latin1');
  const buf = Buffer.allocUnsafe(5 + text.length);
  buf.writeUInt16BE(OPCODES.ERROR, 0);
  buf.writeUInt16BE(code, 2);
  text.copy(buf, 4);
  buf[4 + text.length] = 0;
  return buf;
}

/** Encodes an OACK carrying the accepted options, in the order given. */
export function encodeOack(options: ReadonlyMap<string, string>): Buffer {
  const parts: Buffer[] = [Buffer.from([0, OPCODES.OACK])];
  for (const [name, value] of options) parts.push(Buffer.from(`${name}\0${value}\0`, 'latin1'));
  return Buffer.concat(parts);
}

/** Bytes before the payload in a DATA packet. */
export const DATA_HEADER = 4;

/** Writes the DATA header for `block` (wrapped to 16 bits) at the start of a reusable packet buffer. */
export function writeDataHeader(packet: Buffer, block: number): void {
  packet[0] = 0;
  packet[1] = OPCODES.DATA;
  packet[2] = (block >>> 8) & 0xff;
  packet[3] = block & 0xff;
}
