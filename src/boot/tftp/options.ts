/**
 * Option negotiation (RFC 2347) for blksize (RFC 2348), timeout and tsize (RFC 2349) and
 * windowsize (RFC 7440). Pure: takes the requested options and the server's limits, returns the
 * transfer parameters and the options to acknowledge, or the reason to refuse with error 8.
 */
import { ERROR_CODES } from './packets.js';

/** RFC 2348: the valid blksize range. */
export const BLKSIZE_MIN = 8;
export const BLKSIZE_MAX = 65464;
/** RFC 1350's fixed block size, used when blksize is not negotiated. */
export const DEFAULT_BLKSIZE = 512;
/** RFC 2349: the valid timeout range, in seconds. */
export const TIMEOUT_MIN_S = 1;
export const TIMEOUT_MAX_S = 255;
/** RFC 7440: the valid windowsize range. */
export const WINDOWSIZE_MIN = 1;
export const WINDOWSIZE_MAX = 65535;

/** What the server allows; requests above a maximum are clamped, as RFC 2348/7440 permit. */
export interface NegotiationLimits {
  maxBlksize: number;
  maxWindowsize: number;
  /** Retransmission timeout when the client does not ask for one. */
  defaultTimeoutMs: number;
  /**
   * Longest timeout acknowledged; a client asking for more gets no `timeout` in the OACK and runs
   * with the default (RFC 2347: the server leaves out options it does not accept). Default: 255 s.
   */
  maxTimeoutMs?: number;
}

/** The parameters one transfer runs with. */
export interface TransferParameters {
  blksize: number;
  windowsize: number;
  timeoutMs: number;
  /** Options to send in an OACK; empty means no OACK (plain RFC 1350 transfer). */
  oack: Map<string, string>;
}

/** A refusal: answer with ERROR 8 and this message. */
export interface NegotiationFault {
  code: typeof ERROR_CODES.OPTION_NEGOTIATION;
  message: string;
}

/** Strict decimal: no sign, no exponent, no spaces; at most 10 digits so it fits a number. */
function decimal(value: string): number | null {
  return /^[0-9]{1,10}$/.test(value) ? Number(value) : null;
}

function refuse(message: string): NegotiationFault {
  return { code: ERROR_CODES.OPTION_NEGOTIATION, message };
}

/**
 * Negotiates a read request's options. `fileSize` answers tsize; pass null when the size on the
 * wire is not known in advance (netascii), and tsize is then not acknowledged. Unknown options are
 * ignored (RFC 2347). Values that are not decimal or lie below an option's range are refused with
 * error 8; blksize and windowsize above the server's maximum are answered with the maximum, and a
 * timeout above `maxTimeoutMs` is left out of the OACK (the transfer runs with the default).
 */
export function negotiate(
  requested: ReadonlyMap<string, string>,
  fileSize: number | null,
  limits: NegotiationLimits,
): TransferParameters | NegotiationFault {
  const params: TransferParameters = {
    blksize: DEFAULT_BLKSIZE,
    windowsize: 1,
    timeoutMs: limits.defaultTimeoutMs,
    oack: new Map(),
  };
  // Acknowledge in the order the client asked, which is what clients print and expect.
  for (const [name, value] of requested) {
    switch (name) {
      case 'blksize': {
        const n = decimal(value);
        if (n === null || n < BLKSIZE_MIN) return refuse(`blksize must be ${BLKSIZE_MIN}-${BLKSIZE_MAX}, got "${value.slice(0, 16)}"`);
        params.blksize = Math.min(n, limits.maxBlksize, BLKSIZE_MAX);
        params.oack.set(name, String(params.blksize));
        break;
      }
      case 'timeout': {
        const n = decimal(value);
        if (n === null || n < TIMEOUT_MIN_S || n > TIMEOUT_MAX_S) {
          return refuse(`timeout must be ${TIMEOUT_MIN_S}-${TIMEOUT_MAX_S} seconds, got "${value.slice(0, 16)}"`);
        }
        // RFC 2349 wants the value echoed as asked, so a long one is not clamped but left out: a
        // client that waits minutes per packet would hold a transfer for half an hour.
        if (n * 1000 > (limits.maxTimeoutMs ?? TIMEOUT_MAX_S * 1000)) break;
        params.timeoutMs = n * 1000;
        params.oack.set(name, String(n));
        break;
      }
      case 'tsize':
        // A client sends 0 here (RFC 2349), but the value of a read request's tsize means
        // nothing to the server and atftp sends "enable": any value asks for the size.
        if (fileSize !== null) params.oack.set(name, String(fileSize));
        break;
      case 'windowsize': {
        const n = decimal(value);
        if (n === null || n < WINDOWSIZE_MIN) return refuse(`windowsize must be ${WINDOWSIZE_MIN}-${WINDOWSIZE_MAX}, got "${value.slice(0, 16)}"`);
        params.windowsize = Math.min(n, limits.maxWindowsize, WINDOWSIZE_MAX);
        params.oack.set(name, String(params.windowsize));
        break;
      }
      default:
        break;
    }
  }
  return params;
}

/** Narrows a negotiation result. */
export function isNegotiationFault(r: TransferParameters | NegotiationFault): r is NegotiationFault {
  return 'code' in r;
}
