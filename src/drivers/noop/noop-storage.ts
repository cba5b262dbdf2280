/**
 * `noop` storage (Ironic's `NoopStorage`, every hardware type's and Ironic's configured default):
 * the node has no remote volumes to attach. Validation passes; nothing else happens.
 */
import type { StorageInterface } from '../storage.js';

export class NoopStorage implements StorageInterface {
  async validate(): Promise<void> {}
}
