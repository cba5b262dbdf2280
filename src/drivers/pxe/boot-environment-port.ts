/**
 * What the PXE/iPXE boot interfaces need from the conductor's boot environment (`src/boot`). The
 * shapes are the boot environment's own plain input types, so a `BootEnvironment` instance is a
 * `BootEnvironmentPort` as it is; tests pass a recording fake.
 */
import type { BootImages, BootNode, BootPort } from '../../boot/types.js';

export type { BootImages, BootNode, BootPort };

export interface BootEnvironmentPort {
  /**
   * Makes the node's boot files, per-MAC links and DHCP entries on this conductor exactly what
   * `node` (interface, mode, label, kernel parameters), its pxe-enabled `ports` and `images` call
   * for, fetching and verifying images as needed. Idempotent and compare-first.
   */
  prepare(node: BootNode, ports: readonly BootPort[], images: BootImages): Promise<unknown>;
  /** Removes all of the node's boot files, links and DHCP entries on this conductor. Idempotent. */
  cleanUp(node: Pick<BootNode, 'uuid'>, ports?: readonly BootPort[]): Promise<unknown>;
}
