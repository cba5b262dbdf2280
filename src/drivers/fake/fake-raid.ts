/**
 * Fake RAID (Ironic's `FakeRAID`): takes any target configuration Ironic's rules accept, with no
 * hardware behind it — for tests and demos, like every `fake` interface. It offers the RAID deploy
 * steps of Ironic's `RAIDInterface`, `apply_configuration` (with its required `raid_config`, checked
 * by Ironic's rules) and `delete_configuration`, at priority 0 (run only when a deploy template or
 * `deploy_steps` asks): they build no array, they only record on the fake machine that they ran.
 */
import type { DeployStep, DeployStepRequest, DeployStepSource } from '../deploy-steps.js';
import type { RaidInterface } from '../raid.js';
import { checkRaidConfig, LOGICAL_DISK_PROPERTIES } from '../raid-config.js';
import type { DriverTask } from '../task.js';
import type { FakeHardwareState } from './fake-state.js';

const FAKE_RAID_DEPLOY_STEPS: readonly DeployStep[] = [
  {
    interface: 'raid', step: 'apply_configuration', priority: 0,
    argsinfo: {
      raid_config: { description: 'The RAID configuration to apply', required: true },
      create_root_volume: { description: 'Whether to create the root volume (default true)', required: false },
      create_nonroot_volumes: { description: 'Whether to create the non-root volumes (default true)', required: false },
      delete_existing: { description: 'Whether to delete the existing RAID configuration first (default true)', required: false },
    },
    description: 'Fake: checks the configuration and records the step, builds nothing.',
  },
  { interface: 'raid', step: 'delete_configuration', priority: 0, argsinfo: {}, description: 'Fake: records the step, deletes nothing.' },
];

export class FakeRaid implements RaidInterface, DeployStepSource {
  constructor(private readonly state?: FakeHardwareState) {}

  async validate(): Promise<void> {}

  async validateRaidConfig(_task: unknown, config: unknown): Promise<void> {
    checkRaidConfig(config);
  }

  logicalDiskProperties(): Record<string, string> {
    return { ...LOGICAL_DISK_PROPERTIES };
  }

  getDeploySteps(): readonly DeployStep[] {
    return this.state ? FAKE_RAID_DEPLOY_STEPS : [];
  }

  async executeDeployStep(task: DriverTask, step: DeployStepRequest): Promise<void> {
    if (step.step === 'apply_configuration') checkRaidConfig(step.args.raid_config);
    this.state!.machine(task.node).deploySteps.push(`${step.interface}.${step.step}`);
  }
}
