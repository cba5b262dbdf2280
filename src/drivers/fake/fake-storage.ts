/**
 * Fake storage (Ironic's `FakeStorage`): fake-hardware's other storage interface. It attaches
 * nothing, as Ironic's (which only sleeps); validation passes.
 */
import type { StorageInterface } from '../storage.js';

export class FakeStorage implements StorageInterface {
  async validate(): Promise<void> {}
}
