/**
 * A manual clean without the ramdisk (API 1.70 `disable_ramdisk`), as the conductor runs it: the
 * steps that need the ramdisk are refused up front (no interface offers an out-of-band one yet, so
 * these use a stand-in interface that does), and an accepted clean boots nothing for its steps and
 * tears nothing down after them, then drops its marker from `driver_internal_info`.
 */
import { describe, expect, it } from 'vitest';
import type { NodeTask } from '../../src/cluster/task.js';
import { DISABLE_RAMDISK_KEY, clean, refuseRamdiskSteps } from '../../src/conductor/cleaning.js';
import type { CleanStep, CleanStepRequest, DriverTask } from '../../src/drivers/index.js';

/** A deploy interface offering one in-band and one out-of-band step, recording what is called. */
function standIn() {
  const calls: string[] = [];
  const steps: CleanStep[] = [
    { interface: 'deploy', step: 'erase_devices', priority: 0, description: 'in the agent' },
    { interface: 'deploy', step: 'reset_bmc', priority: 0, description: 'through the BMC', requiresRamdisk: false },
  ];
  const deploy = {
    getCleanSteps: () => steps,
    executeCleanStep: async (_task: DriverTask, step: CleanStepRequest) => void calls.push(`run ${step.step}`),
    prepareCleaning: async () => {
      calls.push('prepare');
      return 'wait' as const;
    },
    tearDownCleaning: async () => {
      calls.push('tear down');
      return { keepAgent: false };
    },
  };
  const driverTask = { node: {}, ports: [], driver: { deploy, management: {}, power: {}, names: { deploy: 'stand-in' } }, logger: {} } as unknown as DriverTask;
  return { calls, driverTask };
}

/** A lock-holding task over an in-memory node. */
function nodeTask(internal: Record<string, unknown>) {
  const writes: Array<Record<string, unknown>> = [];
  const node = { uuid: 'n-1', automated_clean: null, driver_internal_info: internal } as Record<string, unknown>;
  const task = {
    node,
    update: async (patch: Record<string, unknown>) => {
      writes.push(patch);
      Object.assign(node, patch);
      return node;
    },
    recordHistory: async () => undefined,
  } as unknown as NodeTask;
  return { task, writes, node };
}

const MANUAL = { state: 'cleaning', target: 'manageable' } as const;
const readPower = async () => ({});

describe('manual cleaning without the ramdisk', () => {
  it('refuses every step that needs the ramdisk, naming each, and takes out-of-band ones', () => {
    const { driverTask } = standIn();
    expect(() => refuseRamdiskSteps(driverTask, [{ interface: 'deploy', step: 'reset_bmc' }])).not.toThrow();
    expect(() => refuseRamdiskSteps(driverTask, [{ interface: 'deploy', step: 'reset_bmc' }, { interface: 'deploy', step: 'erase_devices' }])).toThrow(
      /^clean_steps: with disable_ramdisk, clean step deploy\.erase_devices requires booting a ramdisk/,
    );
  });

  it('runs the steps without preparing or tearing down the ramdisk, and drops the marker at the end', async () => {
    const { calls, driverTask } = standIn();
    const { task, writes, node } = nodeTask({ clean_steps: [{ interface: 'deploy', step: 'reset_bmc' }], [DISABLE_RAMDISK_KEY]: true, agent_url: 'kept' });
    const result = await clean(task, driverTask, MANUAL, { automatedClean: true, readPower });
    expect(result.event).toBe('manage');
    expect(calls).toEqual(['run reset_bmc']);
    // Kept while the step ran, gone once the clean ended.
    expect(writes[0]!.driver_internal_info).toMatchObject({ [DISABLE_RAMDISK_KEY]: true, clean_step_index: 0 });
    expect(node.driver_internal_info).toEqual({ clean_steps: [{ interface: 'deploy', step: 'reset_bmc' }], agent_url: 'kept' });
  });

  it('boots the ramdisk as before when the marker is absent', async () => {
    const { calls, driverTask } = standIn();
    const { task } = nodeTask({ clean_steps: [{ interface: 'deploy', step: 'reset_bmc' }] });
    expect((await clean(task, driverTask, MANUAL, { automatedClean: true, readPower })).event).toBe('wait');
    expect(calls).toEqual(['prepare']);
  });
});
