/**
 * Deploy steps (Ironic's `get_deploy_steps` / `execute_deploy_step`): the interfaces of a node offer
 * named steps, each with a priority; a deploy runs, highest priority first, the enabled steps the
 * interfaces offer (the core step `deploy.deploy`, priority 100, which every deploy interface
 * offers and which writes the instance) together with the steps the deploy's templates and its
 * `deploy_steps` ask for. A step asked for must be one the node's interface offers, with the
 * arguments it takes: otherwise the deploy is refused, naming the step and the interface — a step
 * is never skipped in silence.
 *
 * Steps other than the core one run in the conductor and must finish there; the built-in ones that
 * exist are the `fake` BIOS and RAID interfaces' (which only record that they ran).
 */
import { InvalidParameter } from '../common/errors.js';
import type { NodeDriver } from './hardware-type.js';
import type { DriverTask } from './task.js';

/** Interfaces whose steps a deploy may run, with Ironic's order for steps of equal priority (higher first). */
export const DEPLOY_STEP_INTERFACE_PRIORITY = { power: 5, management: 4, deploy: 3, bios: 2, raid: 1 } as const;
export type DeployStepInterface = keyof typeof DEPLOY_STEP_INTERFACE_PRIORITY;
const DEPLOY_STEP_INTERFACES = Object.keys(DEPLOY_STEP_INTERFACE_PRIORITY) as DeployStepInterface[];

/** What an offered step's argument is (Ironic's `argsinfo` entry). */
export interface DeployStepArg {
  description: string;
  required: boolean;
}

/** A step an interface offers. */
export interface DeployStep {
  interface: DeployStepInterface;
  step: string;
  /** Run by every deploy when above 0; 0: only when a template or `deploy_steps` asks (with a priority). */
  priority: number;
  /** The arguments it takes; any other is refused. */
  argsinfo: Readonly<Record<string, DeployStepArg>>;
  /** One line for operators. */
  description: string;
}

/** A step as a deploy runs it: asked for (template, `deploy_steps`) or offered. */
export interface DeployStepRequest {
  interface: string;
  step: string;
  args: Record<string, unknown>;
  priority: number;
}

/** What an interface implements to offer deploy steps besides the core one. */
export interface DeployStepSource {
  /** The steps this interface offers the node. */
  getDeploySteps?(task: DriverTask): readonly DeployStep[];
  /** Runs one offered step to its end (in the conductor). */
  executeDeployStep?(task: DriverTask, step: DeployStepRequest): Promise<void>;
}

/** The core step: the deploy interface's `validate`, `prepare` and `deploy` (Ironic's `deploy.deploy`). */
export const CORE_DEPLOY_STEP: DeployStep = {
  interface: 'deploy', step: 'deploy', priority: 100, argsinfo: {}, description: 'Writes (or points the boot files at) the instance: the deploy interface itself.',
};

export const isCoreStep = (step: { interface: string; step: string }): boolean => step.interface === CORE_DEPLOY_STEP.interface && step.step === CORE_DEPLOY_STEP.step;
const stepId = (step: { interface: string; step: string }): string => `${step.interface}.${step.step}`;

/** Every deploy step the node's interfaces offer: the core step, then each interface's own. */
export function deployStepsOf(task: DriverTask): DeployStep[] {
  const own = DEPLOY_STEP_INTERFACES.flatMap((type) => (task.driver[type] as DeployStepSource).getDeploySteps?.(task) ?? []);
  return [CORE_DEPLOY_STEP, ...own.filter((s) => !isCoreStep(s))];
}

/** Highest priority first; ties by interface (power, management, deploy, bios, raid), as Ironic's `_deploy_step_key`. */
export function sortDeploySteps<T extends { interface: string; priority: number }>(steps: readonly T[]): T[] {
  const rank = (s: T) => DEPLOY_STEP_INTERFACE_PRIORITY[s.interface as DeployStepInterface] ?? 0;
  return [...steps].sort((a, b) => b.priority - a.priority || rank(b) - rank(a));
}

/**
 * Checks steps asked for against what the node's interfaces offer (Ironic's `_validate_user_steps`
 * for deploy steps): each must be offered, take only the arguments its interface knows and, when
 * enabled, get the required ones; the core step may only be disabled (priority 0); no step twice.
 * Throws `InvalidParameter` (400) starting with `prefix`, naming every step refused and the
 * interface implementation that does not offer it.
 */
export function validateDeploySteps(task: DriverTask, requested: readonly DeployStepRequest[], prefix: string): void {
  const offered = new Map(deployStepsOf(task).map((s) => [stepId(s), s]));
  const errors: string[] = [];
  const counts = new Map<string, number>();
  for (const wanted of requested) {
    const id = stepId(wanted);
    counts.set(id, (counts.get(id) ?? 0) + 1);
    const step = offered.get(id);
    if (step === undefined) {
      const name = task.driver.names[wanted.interface as keyof NodeDriver['names']] ?? '(none)';
      const ofInterface = [...offered.values()].filter((s) => s.interface === wanted.interface).map((s) => s.step);
      errors.push(
        `node does not support this deploy step: ${JSON.stringify({ interface: wanted.interface, step: wanted.step })} ` +
          `(${wanted.interface}_interface ${JSON.stringify(name)} offers ${ofInterface.length > 0 ? ofInterface.join(', ') : 'no deploy steps'})`,
      );
      continue;
    }
    const unexpected = Object.keys(wanted.args).filter((k) => !Object.hasOwn(step.argsinfo, k));
    if (unexpected.length > 0) errors.push(`deploy step ${id} has these unexpected arguments: ${unexpected.join(', ')}`);
    if (wanted.priority > 0) {
      const missing = Object.entries(step.argsinfo).filter(([k, info]) => info.required && !Object.hasOwn(wanted.args, k)).map(([k, info]) => `${k} (${info.description})`);
      if (missing.length > 0) errors.push(`deploy step ${id} is missing these required arguments: ${missing.join(', ')}`);
      if (isCoreStep(wanted)) errors.push(`deploy step ${id} is the core step and cannot be overridden by user steps; it may be disabled by setting its priority to 0`);
    }
  }
  const duplicates = [...counts].filter(([, n]) => n > 1).map(([id]) => id);
  if (duplicates.length > 0) errors.push(`deploy steps cannot have the same interface and step twice; duplicate deploy steps for ${duplicates.join(', ')}`);
  if (errors.length > 0) throw new InvalidParameter(`${prefix}${errors.join('; ')}`);
}

/**
 * Runs one step that is not the core step through the interface that offers it. A step no longer
 * offered (the node's interfaces changed since it was checked) fails, never passes.
 */
export async function executeDeployStep(task: DriverTask, step: DeployStepRequest): Promise<void> {
  const type = step.interface as DeployStepInterface;
  const source = DEPLOY_STEP_INTERFACES.includes(type) ? (task.driver[type] as DeployStepSource) : undefined;
  const offered = source?.getDeploySteps?.(task).some((s) => s.step === step.step) === true;
  if (source?.executeDeployStep === undefined || !offered) {
    throw new InvalidParameter(`deploy step ${stepId(step)}: the ${step.interface}_interface ${JSON.stringify(task.driver.names[type as keyof NodeDriver['names']] ?? '(none)')} does not offer it`);
  }
  await source.executeDeployStep(task, step);
}
