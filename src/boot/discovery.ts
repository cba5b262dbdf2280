/**
 * The PXE side of auto-discovery (Ironic's `[auto_discovery]`): what an unknown machine — a MAC no
 * node has — boots when it network-boots, and who answers it.
 *
 * Files. The discovery ramdisk is prepared like a node's deploy ramdisk, under reserved uuids (one
 * per boot config format, version nibble 0: never a generated node uuid, and refused at enrollment),
 * with the agent's `ipa-api-url` and `ipa-inspection-callback-url`; the boot loaders find it as the
 * entry of last resort: PXELINUX's `pxelinux.cfg/default`, GRUB's `grub.cfg` in the TFTP root (both
 * read only when no per-MAC file matches), and for iPXE the config's own URL, which only the
 * ProxyDHCP answer to an unknown machine names. The reconciler never counts these directories as
 * nodes (`listPrepared` leaves them out), so it neither adopts nor sweeps them.
 *
 * Answers. A conductor's ProxyDHCP responder answers a MAC it serves no node for as an unknown
 * machine only when (a) discovery is armed here, (b) the default conductor group's ring assigns the
 * MAC to this conductor — so one conductor answers, and another one takes over when it dies, as for
 * nodes — and (c) no port in the database has the MAC: a known machine without boot files here is
 * never sent to discovery. Decisions are kept for a few seconds (a PXE boot asks two or three times).
 */
import { join } from 'node:path';
import { removeLinkIfTarget, symlinkIfChanged } from './atomic-fs.js';
import type { BootEnvironment } from './boot-environment.js';
import { PXELINUX_CFG } from './layout.js';
import type { ServedBoot } from './proxydhcp/owned-macs.js';
import { NODE_FILES } from './templates/params.js';
import type { BootImages, BootInterface, ConfigFormat } from './types.js';

/** Reserved uuids of the discovery entries, by config format (version nibble 0: no generated uuid). */
export const DISCOVERY_UUIDS: Readonly<Record<ConfigFormat, string>> = {
  pxelinux: '00000000-0000-0000-0000-0000d15c0001',
  grub: '00000000-0000-0000-0000-0000d15c0002',
  ipxe: '00000000-0000-0000-0000-0000d15c0003',
};

const RESERVED = new Set(Object.values(DISCOVERY_UUIDS));

/** True for a uuid of a discovery entry (any case). */
export function isDiscoveryUuid(uuid: string): boolean {
  return RESERVED.has(uuid.toLowerCase());
}

/** The fall-back links the boot loaders read when no per-MAC file matches. */
function defaultLinks(tftpRoot: string): Array<{ format: ConfigFormat; path: string; target: string }> {
  return [
    { format: 'pxelinux', path: join(tftpRoot, PXELINUX_CFG, 'default'), target: `../${DISCOVERY_UUIDS.pxelinux}/${NODE_FILES.config}` },
    { format: 'grub', path: join(tftpRoot, 'grub.cfg'), target: `${DISCOVERY_UUIDS.grub}/${NODE_FILES.config}` },
  ];
}

/** What the discovery entries boot. */
export interface DiscoveryBootSpec {
  images: Required<Pick<BootImages, 'deployKernel' | 'deployRamdisk'>>;
  /** Kernel parameters for the agent (`ipa-api-url`, `ipa-inspection-callback-url`). */
  kernelParams: string;
  /** Formats to prepare: `pxelinux` and `grub` (TFTP) always make sense; `ipxe` needs an HTTP boot URL. */
  formats: readonly ConfigFormat[];
}

/** Prepares the discovery entries and their fall-back links; returns the formats prepared. */
export async function prepareDiscoveryBoot(environment: BootEnvironment, tftpRoot: string, spec: DiscoveryBootSpec): Promise<ConfigFormat[]> {
  const prepared: ConfigFormat[] = [];
  for (const format of spec.formats) {
    const node = {
      uuid: DISCOVERY_UUIDS[format],
      bootMode: format === 'grub' ? ('uefi' as const) : ('bios' as const),
      bootInterface: format === 'ipxe' ? ('ipxe' as const) : ('pxe' as const),
      label: 'deploy' as const,
      deployKernelParams: spec.kernelParams,
    };
    await environment.prepare(node, [], spec.images);
    prepared.push(format);
  }
  for (const link of defaultLinks(tftpRoot)) if (prepared.includes(link.format)) await symlinkIfChanged(link.path, link.target);
  return prepared;
}

/** Removes the discovery entries and the fall-back links that point at them (nothing else). */
export async function removeDiscoveryBoot(environment: BootEnvironment, tftpRoot: string): Promise<void> {
  for (const link of defaultLinks(tftpRoot)) await removeLinkIfTarget(link.path, link.target);
  for (const uuid of Object.values(DISCOVERY_UUIDS)) await environment.cleanUp({ uuid });
}

/** How long a decision about a MAC is kept (ms): one PXE boot's DISCOVER, REQUEST and boot server request. */
const DECISION_TTL_MS = 10_000;
/** Most decisions kept; past it the cache starts again (a flood of new MACs cannot grow it). */
const MAX_DECISIONS = 4096;

/** Says whether an unknown-to-this-conductor MAC is to be answered as an unknown machine. */
export type DiscoveryResolver = (mac: string) => Promise<boolean>;

/**
 * The ProxyDHCP responder's answers for unknown machines: unarmed (no answer) until the conductor
 * has prepared the discovery entries and knows the ring, then the resolver decides per MAC.
 */
export class DiscoveryAnswers {
  private resolver: DiscoveryResolver | null = null;
  private bootInterface: BootInterface = 'pxe';
  private readonly decisions = new Map<string, { answer: boolean; at: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Starts answering: `bootInterface` is `ipxe` when the iPXE entry was prepared. */
  arm(resolver: DiscoveryResolver, bootInterface: BootInterface): void {
    this.resolver = resolver;
    this.bootInterface = bootInterface;
    this.decisions.clear();
  }

  disarm(): void {
    this.resolver = null;
    this.decisions.clear();
  }

  get armed(): boolean {
    return this.resolver !== null;
  }

  /** Forgets the decisions (the ring changed, a node was enrolled). */
  forget(): void {
    this.decisions.clear();
  }

  /** How `mac` boots as an unknown machine, or undefined when it is not to be answered from here. */
  async lookup(mac: string): Promise<ServedBoot | undefined> {
    const resolver = this.resolver;
    if (resolver === null) return undefined;
    const now = this.now();
    let decision = this.decisions.get(mac);
    if (decision === undefined || now - decision.at > DECISION_TTL_MS) {
      decision = { answer: await resolver(mac), at: now };
      if (this.decisions.size >= MAX_DECISIONS) this.decisions.clear();
      this.decisions.set(mac, decision);
    }
    if (!decision.answer || this.resolver === null) return undefined;
    const iface = this.bootInterface;
    return {
      uuid: DISCOVERY_UUIDS[iface === 'ipxe' ? 'ipxe' : 'pxelinux'],
      bootMode: 'bios',
      bootInterface: iface,
      ...(iface === 'ipxe' ? { ipxeScript: `${DISCOVERY_UUIDS.ipxe}/${NODE_FILES.config}` } : {}),
    };
  }
}
