/**
 * Clean steps (Ironic's `get_clean_steps` / `execute_clean_step`): an interface that can clean offers
 * named steps; automated cleaning (`provide`, undeploy) runs those with a priority above 0, highest
 * first, and manual cleaning (`clean` with `clean_steps`) runs exactly the steps asked for, each of
 * which must be offered by the node's interface. An interface without steps offers none, so an
 * automated clean of such a node runs nothing (and says so), and a manual clean is refused.
 */
import { InvalidParameter } from '../common/errors.js';
import type { NodeDriver } from './hardware-type.js';
import type { DriverTask } from './task.js';

/** Interfaces whose steps a clean may run, in Ironic's order for steps of equal priority. */
export const CLEAN_STEP_INTERFACES = ['deploy', 'management', 'power'] as const;
export type CleanStepInterface = (typeof CLEAN_STEP_INTERFACES)[number];

/** A step an interface offers. */
export interface CleanStep {
  interface: CleanStepInterface;
  /** The step's name, e.g. `erase_devices_metadata`. */
  step: string;
  /** Automated cleaning runs steps above 0, highest first; 0 means manual cleaning only. */
  priority: number;
  /** One line for operators. */
  description: string;
  /**
   * Whether the step runs in (or needs) the node's ramdisk: true unless said otherwise, as Ironic's
   * `clean_step` decorator. A manual clean with `disable_ramdisk` (API 1.70) takes only steps
   * that say false (out-of-band ones, through the BMC).
   */
  requiresRamdisk?: boolean;
}

/** A step as requested (`clean_steps` of a manual clean) and as recorded in `clean_step`. */
export interface CleanStepRequest {
  interface: string;
  step: string;
  args?: Record<string, unknown>;
}

/**
 * A step that goes on elsewhere (in the node's agent): the node waits in `clean wait` until a
 * heartbeat says the step ended. `state` is kept for the interface in
 * `driver_internal_info.clean_step_state` while the step runs (the agent's command id…).
 */
export interface CleanStepWait {
  kind: 'wait';
  state?: Readonly<Record<string, unknown>>;
}

/** What an interface implements to offer clean steps; optional on every interface that may clean. */
export interface CleanStepSource {
  /** The steps this interface offers the node. */
  getCleanSteps?(task: DriverTask): readonly CleanStep[];
  /** Runs one of the offered steps; resolves once it is done, or with `wait` when it goes on in the node. */
  executeCleanStep?(task: DriverTask, step: CleanStepRequest): Promise<void | CleanStepWait>;
  /**
   * Before the first step of a clean that runs any: gets the node ready for its steps (Ironic's
   * `prepare_cleaning`: boots the deploy agent). `wait`: the node waits in `clean wait` for the
   * agent's first heartbeat, which resumes the clean at its first step; `ready`: go on now.
   */
  prepareCleaning?(task: DriverTask): Promise<'ready' | 'wait'>;
  /**
   * After the last step, or a failed one (Ironic's `tear_down_cleaning`): undoes what
   * `prepareCleaning` did. `keepAgent`: the agent stays up for the next verb (fast track), so its
   * session (token, URL) is kept with the node — never after a failed or aborted clean (`failed`),
   * which powers the node off.
   */
  tearDownCleaning?(task: DriverTask, failed?: boolean): Promise<{ keepAgent: boolean }>;
}

/** Every step the node's interfaces offer, highest priority first. */
export function cleanStepsOf(task: DriverTask): CleanStep[] {
  const steps = CLEAN_STEP_INTERFACES.flatMap((type) => (task.driver[type] as CleanStepSource).getCleanSteps?.(task) ?? []);
  return steps
    .map((step, index) => ({ step, index }))
    .sort((a, b) => b.step.priority - a.step.priority || a.index - b.index)
    .map(({ step }) => step);
}

/** The steps automated cleaning runs (priority above 0), in order. */
export function automatedCleanSteps(task: DriverTask): CleanStepRequest[] {
  return cleanStepsOf(task)
    .filter((s) => s.priority > 0)
    .map((s) => ({ interface: s.interface, step: s.step }));
}

/**
 * Checks the steps of a manual clean against what the node's interfaces offer. Throws
 * `InvalidParameter` (400) with Ironic's wording, naming each unsupported step and its interface.
 */
export function validateCleanSteps(task: DriverTask, requested: readonly CleanStepRequest[]): void {
  const offered = cleanStepsOf(task);
  const errors: string[] = [];
  for (const wanted of requested) {
    if (offered.some((s) => s.interface === wanted.interface && s.step === wanted.step)) continue;
    const type = wanted.interface as keyof NodeDriver['names'];
    const name = task.driver.names[type] ?? '(none)';
    const ofInterface = offered.filter((s) => s.interface === wanted.interface).map((s) => s.step);
    errors.push(
      `node does not support this clean step: ${JSON.stringify({ interface: wanted.interface, step: wanted.step })} ` +
        `(${wanted.interface}_interface ${JSON.stringify(name)} offers ${ofInterface.length > 0 ? ofInterface.join(', ') : 'no clean steps'})`,
    );
  }
  if (errors.length > 0) throw new InvalidParameter(`clean_steps: ${errors.join('; ')}`);
}

/** Runs one step through the interface that offers it; `wait` when it goes on in the node. */
export async function executeCleanStep(task: DriverTask, step: CleanStepRequest): Promise<CleanStepWait | null> {
  if (!(CLEAN_STEP_INTERFACES as readonly string[]).includes(step.interface)) throw new InvalidParameter(`clean step ${JSON.stringify(step)}: unknown interface`);
  const source = task.driver[step.interface as CleanStepInterface] as CleanStepSource;
  if (source.executeCleanStep === undefined) throw new InvalidParameter(`clean step ${JSON.stringify(step)}: the ${step.interface} interface has no clean steps`);
  return (await source.executeCleanStep(task, step)) ?? null;
}

/**
 * Gets the node ready for the steps of a clean (`prepareCleaning` of each interface that has
 * one, in `CLEAN_STEP_INTERFACES` order): `wait` when one of them booted something the node must
 * wait for.
 */
export async function prepareCleaning(task: DriverTask): Promise<'ready' | 'wait'> {
  let outcome: 'ready' | 'wait' = 'ready';
  for (const type of CLEAN_STEP_INTERFACES) {
    const source = task.driver[type] as CleanStepSource;
    if (source.prepareCleaning !== undefined && (await source.prepareCleaning(task)) === 'wait') outcome = 'wait';
  }
  return outcome;
}

/**
 * Undoes `prepareCleaning` on every interface; `keepAgent` when one keeps the node's agent up
 * (never when the clean `failed`).
 */
export async function tearDownCleaning(task: DriverTask, failed = false): Promise<{ keepAgent: boolean }> {
  let keepAgent = false;
  for (const type of CLEAN_STEP_INTERFACES) {
    const source = task.driver[type] as CleanStepSource;
    if (source.tearDownCleaning !== undefined && (await source.tearDownCleaning(task, failed)).keepAgent) keepAgent = true;
  }
  return { keepAgent };
}

/**
 * Parses `clean_steps` from a request body (Ironic's schema: a non-empty list of objects with
 * `interface`, `step` and optional `args`). Throws `InvalidParameter` naming the offending entry.
 */
export function parseCleanSteps(value: unknown): CleanStepRequest[] {
  if (!Array.isArray(value) || value.length === 0) throw new InvalidParameter('clean_steps: expected a non-empty list of {"interface", "step", "args"} objects');
  return value.map((entry: unknown, i) => {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new InvalidParameter(`clean_steps[${i}]: expected an object with interface and step`);
    const { interface: iface, step, args, ...rest } = entry as Record<string, unknown>;
    const extra = Object.keys(rest);
    if (extra.length > 0) throw new InvalidParameter(`clean_steps[${i}]: unexpected key ${JSON.stringify(extra[0])}; allowed: interface, step, args`);
    if (typeof iface !== 'string' || iface === '') throw new InvalidParameter(`clean_steps[${i}].interface: required, a string such as "deploy"`);
    if (typeof step !== 'string' || step === '') throw new InvalidParameter(`clean_steps[${i}].step: required, a string`);
    if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args))) throw new InvalidParameter(`clean_steps[${i}].args: expected an object`);
    return args === undefined ? { interface: iface, step } : { interface: iface, step, args: args as Record<string, unknown> };
  });
}
