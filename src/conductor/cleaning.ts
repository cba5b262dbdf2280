/**
 * Cleaning, as the node's owner runs it (Ironic's `do_node_clean`, `do_next_clean_step`,
 * `_do_node_clean_abort`): the steps of a manual or automated clean, run one by one through the
 * interfaces that offer them; steps that run in the node's agent leave the node in `clean wait`
 * until a heartbeat reports their end (`agent-session.ts`), and the clean goes on from where
 * `driver_internal_info` says it is — on whichever conductor owns the node then.
 */
import type { NodePatch, NodeTask } from '../cluster/task.js';
import { InvalidParameter } from '../common/errors.js';
import { automatedCleanSteps, cleanStepsOf, executeCleanStep, prepareCleaning, tearDownCleaning } from '../drivers/index.js';
import type { CleanStepRequest, DriverTask } from '../drivers/index.js';
import { cleaningEndEvent } from '../nodes/retirement.js';
import type { ProvisionStatus } from '../nodes/state-machine.js';

export interface CleaningDeps {
  /** `[conductor] automated_clean`, which a node's own `automated_clean` (true or false) overrides. */
  automatedClean: boolean;
  /** The power state to write with the node's next state (the BMC read back; null when that fails). */
  readPower: (driverTask: DriverTask) => Promise<NodePatch>;
}

/** How a clean's turn ended: the event to fire, what to write with it, and whether the agent stays up. */
export interface CleanResult {
  event: 'done' | 'manage' | 'wait';
  changes?: NodePatch;
  /** Fast track kept the node's agent up: its session outlives the clean. */
  keepAgent?: boolean;
}

/**
 * The key of `driver_internal_info` that marks a manual clean without the ramdisk (API 1.70's
 * `disable_ramdisk`), as Ironic names it; kept while the clean runs, dropped when it ends.
 */
export const DISABLE_RAMDISK_KEY = 'cleaning_disable_ramdisk';

/** The keys of `driver_internal_info` a clean keeps while it runs (Ironic's, but for clean_step_done and clean_step_state). */
const CLEAN_BOOKKEEPING = ['clean_steps', 'clean_step', 'clean_step_index', 'clean_step_done', 'clean_step_state', DISABLE_RAMDISK_KEY];

/**
 * Refuses (400, naming each) the steps of a manual clean with `disable_ramdisk` that need the
 * node's ramdisk: such a clean boots none, so they could not run. Steps say so with
 * `requiresRamdisk: false` (out-of-band steps); unsaid means they need it, as in Ironic.
 */
export function refuseRamdiskSteps(driverTask: DriverTask, steps: readonly CleanStepRequest[]): void {
  const offered = cleanStepsOf(driverTask);
  const needing = steps.filter((wanted) => offered.find((s) => s.interface === wanted.interface && s.step === wanted.step)?.requiresRamdisk !== false);
  if (needing.length > 0) {
    throw new InvalidParameter(`clean_steps: with disable_ramdisk, ${needing.map((s) => `clean step ${s.interface}.${s.step}`).join(', ')} ${needing.length > 1 ? 'require' : 'requires'} booting a ramdisk; only out-of-band steps can run without one`);
  }
}

export function withoutCleanBookkeeping(internal: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(internal).filter(([key]) => !CLEAN_BOOKKEEPING.includes(key)));
}

/**
 * `cleaning` (Ironic's `do_node_clean` and `do_next_clean_step`): a manual clean runs the steps
 * stored by `provision` (already checked against the interfaces), an automated one the
 * interfaces' steps with a priority above 0 — none when automated cleaning is off for the node
 * (`automatedCleaningOn`).
 * Before the first step the interfaces get the node ready (`prepareCleaning`: the direct deploy
 * boots its agent, and the node waits in `clean wait` for it); a step that runs in the agent
 * leaves the node in `clean wait` too, and the heartbeat that reports its end brings the node back
 * here, where the next step runs (`clean_step_index`, `clean_step_done`). After the last step,
 * or a failed one, `tearDownCleaning` (power off, unless fast track keeps the agent up).
 * `driver_internal_info.clean_steps` keeps the steps that ran, so a clean that ran nothing says
 * so (an empty list) instead of pretending; `clean_step` names the one running.
 */
export async function clean(task: NodeTask, driverTask: DriverTask, status: ProvisionStatus, deps: CleaningDeps): Promise<CleanResult> {
  const manual = status.target === 'manageable';
  const { clean_steps: stored, clean_step_index: storedIndex, clean_step_done: stepDone } = task.node.driver_internal_info;
  // A manual clean without the ramdisk (API 1.70): nothing is booted for it, nor torn down after.
  const noRamdisk = manual && task.node.driver_internal_info[DISABLE_RAMDISK_KEY] === true;
  const running = noRamdisk ? { [DISABLE_RAMDISK_KEY]: true } : {};
  /** `driver_internal_info` as it is now, the clean's bookkeeping replaced by `extra`. */
  const info = (extra: Record<string, unknown>) => ({ ...withoutCleanBookkeeping(task.node.driver_internal_info), ...extra });
  let steps: CleanStepRequest[];
  let index: number;
  if (typeof storedIndex === 'number' && Array.isArray(stored)) {
    // Back from `clean wait`: the agent came up (run the step at the index), or the step at the
    // index ended in it (run the next).
    steps = stored as CleanStepRequest[];
    index = storedIndex;
    if (stepDone === true && steps[index] !== undefined) {
      await task.recordHistory({ eventType: 'clean', severity: 'INFO', event: `clean step ${steps[index]!.interface}.${steps[index]!.step} done` });
      index++;
    }
  } else {
    const automated = manual || automatedCleaningOn(task.node.automated_clean, deps.automatedClean);
    steps = manual ? (Array.isArray(stored) ? (stored as CleanStepRequest[]) : []) : !automated ? [] : automatedCleanSteps(driverTask);
    if (manual && steps.length === 0) throw new Error('manual cleaning has no clean_steps to run');
    if (steps.length === 0) {
      const why = !automated
        ? `automated cleaning is disabled (${task.node.automated_clean === false ? "the node's automated_clean = false" : '[conductor] automated_clean = false'})`
        : "automated cleaning: the node's interfaces offer no clean steps";
      await task.recordHistory({ eventType: 'clean', severity: 'INFO', event: `${why}; nothing was run` });
      await task.update({ driver_internal_info: info({ clean_steps: [] }) });
      return { event: cleaningEndEvent(status, task.node.retired) };
    }
    index = 0;
    if (noRamdisk) {
      await task.recordHistory({ eventType: 'clean', severity: 'INFO', event: 'manual cleaning without the ramdisk (disable_ramdisk): no agent is booted' });
    } else if ((await cleaningPart(task, driverTask, () => prepareCleaning(driverTask), 'getting the node ready for cleaning failed')) === 'wait') {
      await task.update({ driver_internal_info: info({ clean_steps: steps, clean_step_index: 0 }) });
      await task.recordHistory({ eventType: 'clean', severity: 'INFO', event: "cleaning waits for the node's agent to boot and call back" });
      return { event: 'wait', changes: await deps.readPower(driverTask) };
    }
  }
  for (; index < steps.length; index++) {
    const step = steps[index]!;
    const name = `${step.interface}.${step.step}`;
    await task.update({ driver_internal_info: info({ ...running, clean_steps: steps, clean_step_index: index, clean_step: step }) });
    const outcome = await cleaningPart(task, driverTask, () => executeCleanStep(driverTask, step), `clean step ${name} failed`);
    if (outcome !== null) {
      await task.update({ driver_internal_info: info({ ...running, clean_steps: steps, clean_step_index: index, clean_step: step, ...(outcome.state ? { clean_step_state: outcome.state } : {}) }) });
      return { event: 'wait' };
    }
    await task.recordHistory({ eventType: 'clean', severity: 'INFO', event: `clean step ${name} done` });
  }
  const { keepAgent } = noRamdisk ? { keepAgent: false } : await cleaningPart(task, driverTask, () => tearDownCleaning(driverTask), 'ending the clean failed');
  await task.update({ driver_internal_info: info({ clean_steps: steps }) });
  return { event: cleaningEndEvent(status, task.node.retired), changes: await deps.readPower(driverTask), keepAgent };
}

/**
 * Whether automated cleaning runs the node's clean steps (Ironic's `skip_automated_cleaning`,
 * negated): the node's `automated_clean` when set — true cleans even where the configuration says
 * not to, false never cleans — else `[conductor] automated_clean`.
 */
export function automatedCleaningOn(node: boolean | null, configured: boolean): boolean {
  return node ?? configured;
}

/**
 * One part of a clean; when it throws, the clean's bookkeeping is dropped from
 * `driver_internal_info` (keeping the steps), the node's cleaning is torn down (power off) as
 * Ironic's `cleaning_error_handler` does, and the error is thrown again as `what: message`.
 */
async function cleaningPart<T>(task: NodeTask, driverTask: DriverTask, part: () => Promise<T>, what: string): Promise<T> {
  try {
    return await part();
  } catch (err) {
    const { clean_steps: steps } = task.node.driver_internal_info;
    await task.update({ driver_internal_info: { ...withoutCleanBookkeeping(task.node.driver_internal_info), ...(steps !== undefined ? { clean_steps: steps } : {}) } });
    let message = `${what}: ${(err as Error).message}`;
    try {
      await tearDownCleaning(driverTask, true);
    } catch (teardown) {
      message += `; ending the clean failed too: ${(teardown as Error).message}`;
    }
    throw new Error(message, { cause: err });
  }
}

/**
 * An aborted `clean wait` (Ironic's `_do_node_clean_abort`): the node's cleaning is torn down —
 * powered off, its ramdisk's boot files gone — and `last_error` says the operator stopped it.
 */
export async function abortCleaning(task: NodeTask, driverTask: DriverTask, readPower: CleaningDeps['readPower']): Promise<void> {
  const step = task.node.driver_internal_info.clean_step as { interface?: string; step?: string } | undefined;
  let error = `By request, the clean operation was aborted${step?.step ? ` during clean step ${step.interface}.${step.step}` : ''}`;
  try {
    await tearDownCleaning(driverTask, true);
  } catch (err) {
    error += `; ending the clean failed: ${(err as Error).message}`;
  }
  await task.update({ last_error: error, driver_internal_info: withoutCleanBookkeeping(task.node.driver_internal_info), ...(await readPower(driverTask)) });
  await task.recordHistory({ eventType: 'clean', severity: 'WARNING', event: error });
}
