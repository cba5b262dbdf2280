/**
 * The BIOS interface (Ironic's `BIOSInterface`, API 1.40): a node's firmware settings, which Ironic
 * caches per node (`bios_settings`, served at `/v1/nodes/{node}/bios`). ironring's built-in
 * implementations read no firmware: `fake` validates and has nothing to cache, `no-bios` refuses,
 * as Ironic's `FakeBIOS` and `NoBIOS`. So no node has cached settings, and the `apply_configuration`
 * and `factory_reset` clean steps are not offered yet.
 */
import type { DriverTask } from './task.js';

export interface BiosInterface {
  /** Checks the interface can be used for the node. Throws `UnsupportedDriverExtension` for `no-bios`. */
  validate(task: DriverTask): Promise<void>;
}
