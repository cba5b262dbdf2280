/**
 * Fake BIOS (Ironic's `FakeBIOS`): validation passes and there is no firmware to read — for tests
 * and demos, like every `fake` interface.
 */
import type { BiosInterface } from '../bios.js';

export class FakeBios implements BiosInterface {
  async validate(): Promise<void> {}
}
