/**
 * Fake BIOS (Ironic's `FakeBIOS`): validation passes and there is no firmware to read — for tests
 * and demos, like every `fake` interface. It offers Ironic's two BIOS deploy steps,
 * `apply_configuration` (with its required `settings`) and `factory_reset`, at priority 0 (run only
 * when a deploy template or `deploy_steps` asks): they change no firmware, they only record on the
 * fake machine that they ran.
 */
import type { BiosInterface } from '../bios.js';
import type { DeployStep, DeployStepRequest, DeployStepSource } from '../deploy-steps.js';
import type { DriverTask } from '../task.js';
import type { FakeHardwareState } from './fake-state.js';

const FAKE_BIOS_DEPLOY_STEPS: readonly DeployStep[] = [
  {
    interface: 'bios', step: 'apply_configuration', priority: 0,
    argsinfo: { settings: { description: 'A list of BIOS settings to be applied', required: true } },
    description: 'Fake: records the step, changes no firmware setting.',
  },
  { interface: 'bios', step: 'factory_reset', priority: 0, argsinfo: {}, description: 'Fake: records the step, resets nothing.' },
];

export class FakeBios implements BiosInterface, DeployStepSource {
  constructor(private readonly state?: FakeHardwareState) {}

  async validate(): Promise<void> {}

  getDeploySteps(): readonly DeployStep[] {
    return this.state ? FAKE_BIOS_DEPLOY_STEPS : [];
  }

  async executeDeployStep(task: DriverTask, step: DeployStepRequest): Promise<void> {
    this.state!.machine(task.node).deploySteps.push(`${step.interface}.${step.step}`);
  }
}
