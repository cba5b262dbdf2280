/**
 * Which MACs this conductor answers PXE requests for, and how each boots: the ProxyDHCP responder's
 * only source of truth. It is filled by the conductor's `BootEnvironment` (a node is in it exactly
 * while this process has prepared, or confirmed, its boot files; clean-up takes it out), so a node
 * whose files are not here is never answered from here. Pure memory: a restarted conductor starts
 * empty and answers a node again only once its reconciler has confirmed the node's files.
 */
import type { BootInterface, BootMode } from '../types.js';

/** How a served node boots. */
export interface ServedBoot {
  uuid: string;
  bootMode: BootMode;
  bootInterface: BootInterface;
  /**
   * The iPXE script an iPXE client of this entry chains, relative to the HTTP boot URL; default
   * `boot.ipxe` (which finds a node's config by MAC). Set for the discovery entry only.
   */
  ipxeScript?: string;
}

/** What the boot environment tells the index (see `BootEnvironmentOptions.served`). */
export interface ServedListener {
  /** The node's files are current here for these (normalized, pxe-enabled) MACs; replaces what was recorded. */
  serve(node: ServedBoot, macs: readonly string[]): void;
  /** The node's files are being removed here: stop answering for it. */
  retire(uuid: string): void;
}

export class OwnedMacs implements ServedListener {
  private readonly byMac = new Map<string, ServedBoot>();
  private readonly macsOf = new Map<string, string[]>();

  serve(node: ServedBoot, macs: readonly string[]): void {
    this.retire(node.uuid);
    const entry: ServedBoot = { uuid: node.uuid, bootMode: node.bootMode, bootInterface: node.bootInterface };
    for (const mac of macs) {
      // A MAC moved to this node from another one here: the other node no longer holds it.
      const previous = this.byMac.get(mac);
      if (previous !== undefined) this.macsOf.set(previous.uuid, (this.macsOf.get(previous.uuid) ?? []).filter((m) => m !== mac));
      this.byMac.set(mac, entry);
    }
    this.macsOf.set(node.uuid, [...macs]);
  }

  retire(uuid: string): void {
    for (const mac of this.macsOf.get(uuid) ?? []) {
      if (this.byMac.get(mac)?.uuid === uuid) this.byMac.delete(mac);
    }
    this.macsOf.delete(uuid);
  }

  /** The node a MAC (`aa:bb:cc:dd:ee:ff`, lower case) boots as, or undefined when it is not served here. */
  lookup(mac: string): ServedBoot | undefined {
    return this.byMac.get(mac);
  }

  /** Forgets every node (graceful stop). */
  clear(): void {
    this.byMac.clear();
    this.macsOf.clear();
  }

  /** MACs answered for. */
  get size(): number {
    return this.byMac.size;
  }
}
