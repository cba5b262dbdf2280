/**
 * LLDP as the deploy agent reports it: with `ipa-collect-lldp=1` on the kernel command line (IPA's
 * parameter), the inventory's `interfaces[].lldp` is the list of TLVs of the first LLDP frame each
 * interface received within `ipa-lldp-timeout` seconds (IPA's, default 30), as `[type, hex value]`
 * pairs — IPA's format, which Ironic's inspection hooks and ironring's (src/nodes/lldp.ts) parse —
 * or `[]` when none came. Without the parameter it stays null, as IPA leaves it.
 *
 * Listening needs packet sockets, which Node lacks: native/lldp_listen.c (built by `npm ci`, copied
 * into the ramdisk by `ironring ramdisk build`). Without it the agent says so and reports null.
 * Where IPA differs: it keeps reading TLVs after the End of LLDPDU one (the frame's padding becomes
 * a run of `[0, ""]`); this stops at it.
 */
import { createRequire } from 'node:module';

/** One TLV: its type (0–127) and its value in lower-case hex. */
export type LldpTlv = [number, string];

interface ListenResult {
  frame: Buffer | null;
  error: string | null;
}

interface NativeLldp {
  listen(names: string[], timeoutMs: number): Promise<ListenResult[]>;
}

const ETHERTYPE_LLDP = 0x88cc;
const ETHERNET_HEADER = 14;
/** IPA's `ipa-lldp-timeout` default, seconds. */
export const DEFAULT_LLDP_TIMEOUT = 30;
/** The most a kernel parameter may ask to wait, seconds (the add-on's bound). */
export const MAX_LLDP_TIMEOUT = 600;

/** The TLVs of an LLDP frame (Ethernet header included), up to and including End of LLDPDU. */
export function parseLldpFrame(frame: Buffer): LldpTlv[] {
  if (frame.length < ETHERNET_HEADER || frame.readUInt16BE(12) !== ETHERTYPE_LLDP) return [];
  const tlvs: LldpTlv[] = [];
  let at = ETHERNET_HEADER;
  while (at + 2 <= frame.length) {
    const header = frame.readUInt16BE(at);
    const type = header >> 9;
    const length = header & 0x1ff;
    const value = frame.subarray(at + 2, Math.min(at + 2 + length, frame.length));
    tlvs.push([type, value.toString('hex')]);
    at += 2 + length;
    if (type === 0) break;
  }
  return tlvs;
}

/** What `ipa-collect-lldp` and `ipa-lldp-timeout` ask for: null when LLDP is not to be collected. */
export function lldpSettings(params: ReadonlyMap<string, string>): { timeoutSeconds: number } | null {
  const collect = params.get('ipa-collect-lldp')?.toLowerCase();
  if (collect === undefined || !['1', 'true', 'yes', 'on'].includes(collect)) return null;
  const timeout = Number(params.get('ipa-lldp-timeout') ?? DEFAULT_LLDP_TIMEOUT);
  const timeoutSeconds = Number.isFinite(timeout) && timeout >= 0 ? Math.min(timeout, MAX_LLDP_TIMEOUT) : DEFAULT_LLDP_TIMEOUT;
  return { timeoutSeconds };
}

let loaded: NativeLldp | null | undefined;
let loadError = '';

/** The add-on, or null when it is not built here (why: {@link lldpListenerError}). */
export function nativeLldp(): NativeLldp | null {
  if (loaded === undefined) {
    try {
      // build/ sits at the package root, two levels above both src/agent and dist/agent.
      loaded = createRequire(import.meta.url)('../../build/Release/lldp_listen.node') as NativeLldp;
    } catch (err) {
      loadError = (err as Error).message.split('\n')[0]!;
      loaded = null;
    }
  }
  return loaded;
}

/** Why the add-on could not be loaded ('' when it was, or has not been tried). */
export function lldpListenerError(): string {
  return loadError;
}

export interface CollectLldpOptions {
  timeoutSeconds: number;
  log?: (line: string) => void;
  /** The listener (tests); default the native add-on. */
  listen?: NativeLldp['listen'];
}

/**
 * Listens on `names` for up to `timeoutSeconds` (less once every interface has a frame): each
 * name's TLVs, `[]` when no frame came or the interface could not be listened on (logged). Null
 * for all when the add-on is missing.
 */
export async function collectLldp(names: readonly string[], options: CollectLldpOptions): Promise<Record<string, LldpTlv[]> | null> {
  const log = options.log ?? (() => undefined);
  const listen = options.listen ?? nativeLldp()?.listen;
  if (listen === undefined) {
    log(`LLDP not collected: the packet socket add-on is not in this ramdisk (${loadError})`);
    return null;
  }
  const unique = [...new Set(names)].slice(0, 64);
  log(`listening for LLDP on ${unique.join(', ') || 'no interface'} for up to ${options.timeoutSeconds} s`);
  const results = await listen(unique, Math.round(options.timeoutSeconds * 1000));
  const byName: Record<string, LldpTlv[]> = Object.create(null) as Record<string, LldpTlv[]>;
  unique.forEach((name, i) => {
    const result = results[i];
    if (result?.error) log(`LLDP on ${name}: ${result.error}`);
    byName[name] = result?.frame ? parseLldpFrame(result.frame) : [];
  });
  const heard = unique.filter((name) => byName[name]!.length > 0);
  log(`LLDP heard on ${heard.length} of ${unique.length} interfaces${heard.length > 0 ? ` (${heard.join(', ')})` : ''}`);
  return byName;
}
