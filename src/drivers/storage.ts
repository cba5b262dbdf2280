/**
 * The storage interface (Ironic's `StorageInterface`, API 1.33): attaching a node's remote volumes
 * (its volume targets, `/v1/volume`) around a deploy. ironring attaches none yet: the built-in
 * implementations, `noop` and fake-hardware's `fake`, only validate — the deploy writes the image
 * to a local disk, as with Ironic's `NoopStorage` and `FakeStorage`.
 */
import type { DriverTask } from './task.js';

export interface StorageInterface {
  /** Checks the interface can be used for the node; `noop` and `fake` always can. */
  validate(task: DriverTask): Promise<void>;
}
