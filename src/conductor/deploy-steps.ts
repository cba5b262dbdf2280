/**
 * Deploying as a list of deploy steps (Ironic's `do_node_deploy`, `set_node_deployment_steps`,
 * `do_next_deploy_step`): the steps of the deploy templates whose names are among the traits the
 * instance asks for (`instance_info.traits`, each of them a trait of the node), the `deploy_steps`
 * of the request (API 1.69, which win over a template's step of the same interface and name), and
 * the enabled steps the node's interfaces offer — the core step `deploy.deploy` above all — run
 * highest priority first. Checked when the deploy is asked for (400, nothing changes) and again
 * when it starts (templates may have changed meanwhile: then `deploy failed`, naming the step).
 *
 * Where the deploy is lives in `driver_internal_info` (`deploy_steps`, `deploy_step_index`,
 * `deploy_step`), so the core step can wait for the node's agent and a conductor taking the node
 * over goes on from the step it was at. `deploy_steps` stays after the deploy: what ran.
 */
import type { NodePatch, NodeTask } from '../cluster/task.js';
import { InvalidParameter } from '../common/errors.js';
import type { Store } from '../db/connect.js';
import { deployStepsOf, executeDeployStep, isCoreStep, sortDeploySteps, validateDeploySteps } from '../drivers/deploy-steps.js';
import type { DeployStepRequest } from '../drivers/deploy-steps.js';
import type { DriverTask } from '../drivers/index.js';
import { templatesNamed } from '../nodes/deploy-template-store.js';

/** The keys of `driver_internal_info` a deploy keeps while it runs. */
const DEPLOY_BOOKKEEPING = ['deploy_steps', 'deploy_step_index', 'deploy_step', 'user_deploy_steps'];

export function withoutDeployBookkeeping(internal: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(internal).filter(([key]) => !DEPLOY_BOOKKEEPING.includes(key)));
}

interface NodeView {
  uuid: string;
  traits: readonly string[];
  instance_info: Readonly<Record<string, unknown>>;
  driver_internal_info: Readonly<Record<string, unknown>>;
}

/**
 * The traits the instance asks for (`instance_info.traits`): a list of strings, each a trait of the
 * node (Ironic's `validate_instance_info_traits`); 400 naming `instance_info.traits` otherwise.
 */
export function instanceTraits(node: NodeView): string[] {
  const traits = node.instance_info.traits;
  if (traits === undefined || traits === null || (Array.isArray(traits) && traits.length === 0)) return [];
  if (!Array.isArray(traits) || !traits.every((t) => typeof t === 'string')) {
    throw new InvalidParameter(`instance_info.traits: error parsing the traits of node ${node.uuid}; a list of strings is expected`);
  }
  const missing = traits.filter((t) => !node.traits.includes(t));
  if (missing.length > 0) {
    throw new InvalidParameter(`instance_info.traits: cannot specify instance traits that are not also set on the node; node ${node.uuid} is missing traits ${missing.join(', ')}`);
  }
  return traits as string[];
}

/** The steps of the templates matching the instance's traits, checked against the node's interfaces. */
async function templateSteps(store: Store, node: NodeView, driverTask: DriverTask): Promise<DeployStepRequest[]> {
  const templates = await templatesNamed(store, instanceTraits(node));
  const steps = templates.flatMap((t) => t.steps.map((s) => ({ interface: s.interface, step: s.step, args: s.args, priority: s.priority })));
  validateDeploySteps(
    driverTask,
    steps,
    `deploy templates: validation of the deploy steps of the deploy templates matching this node's instance traits failed. Matching deploy templates: ${templates.map((t) => t.name).join(', ')}. Errors: `,
  );
  return steps;
}

/** The request's `deploy_steps`, as `provision` stored them. */
function userSteps(node: NodeView): DeployStepRequest[] {
  const stored = node.driver_internal_info.user_deploy_steps;
  return Array.isArray(stored) ? (stored as DeployStepRequest[]) : [];
}

/**
 * For a provision action that starts a deploy (`next` is `deploying`): checks the instance's traits,
 * the matching templates' steps and the request's `deploy_steps` against the node's interfaces
 * (400 naming each step refused) and returns the `driver_internal_info` the deploy starts with —
 * nothing of an earlier deploy's progress, the request's steps kept for the deploy to read. For any
 * other action: refuses `deploy_steps` (400), returns undefined.
 */
export async function startDeployInfo(store: Store, node: NodeView, next: string, driverTask: () => Promise<DriverTask>, deploySteps: readonly DeployStepRequest[] | undefined): Promise<Record<string, unknown> | undefined> {
  if (next !== 'deploying') {
    if (deploySteps !== undefined) throw new InvalidParameter('deploy_steps: only valid when setting target provision state to active or rebuild');
    return undefined;
  }
  const task = await driverTask();
  await templateSteps(store, node, task);
  if (deploySteps !== undefined) validateDeploySteps(task, deploySteps, 'deploy_steps: validation of the deploy steps of the "deploy_steps" argument failed: ');
  return { ...withoutDeployBookkeeping(node.driver_internal_info), ...(deploySteps !== undefined ? { user_deploy_steps: deploySteps.map((s) => ({ ...s })) } : {}) };
}

/**
 * The steps a deploy runs, in order (Ironic's `_get_all_deployment_steps`): the request's steps,
 * then the templates' that the request does not name, then the interfaces' enabled steps that
 * neither names; the enabled ones (priority above 0), highest priority first.
 */
export async function planDeploy(store: Store, node: NodeView, driverTask: DriverTask): Promise<DeployStepRequest[]> {
  const asked = userSteps(node);
  validateDeploySteps(driverTask, asked, 'deploy_steps: validation of the deploy steps of the "deploy_steps" argument failed: ');
  const id = (s: { interface: string; step: string }) => `${s.interface}.${s.step}`;
  const named = new Set(asked.map(id));
  const merged = [...asked, ...(await templateSteps(store, node, driverTask)).filter((s) => !named.has(id(s)))];
  const overridden = new Set(merged.map(id));
  const offered = deployStepsOf(driverTask)
    .filter((s) => s.priority > 0 && !overridden.has(id(s)))
    .map((s) => ({ interface: s.interface, step: s.step, args: {}, priority: s.priority }));
  return sortDeploySteps([...offered, ...merged.filter((s) => s.priority > 0)]);
}

const coreOnly = (steps: readonly DeployStepRequest[]): boolean => steps.length === 1 && isCoreStep(steps[0]!);

export interface DeployResult {
  event: 'done' | 'wait';
  changes?: NodePatch;
}

/**
 * The work of `deploying`: plans the steps on a fresh deploy, then runs them from where
 * `deploy_step_index` says. The core step is the deploy interface's `validate`, `prepare` and
 * `deploy`; when that waits for the node's agent, so does the deploy (`wait call-back`), and the
 * heartbeat that brings the node back here runs the core step again to finish it, then the rest.
 * A step that fails throws `deploy step <interface>.<step> failed: …` (the node goes `deploy failed`).
 */
export async function deployWork(task: NodeTask, driverTask: DriverTask, store: Store, readPower: (d: DriverTask) => Promise<NodePatch>): Promise<DeployResult> {
  const { deploy_steps: stored, deploy_step_index: storedIndex } = task.node.driver_internal_info;
  let steps: DeployStepRequest[];
  let index: number;
  if (typeof storedIndex === 'number' && Array.isArray(stored)) {
    steps = stored as DeployStepRequest[];
    index = storedIndex;
  } else {
    steps = await planDeploy(store, task.node, driverTask);
    index = 0;
    await task.update({ driver_internal_info: { ...task.node.driver_internal_info, deploy_steps: steps, deploy_step_index: 0 } });
    if (!coreOnly(steps)) {
      const core = steps.some(isCoreStep) ? '' : '; the core step deploy.deploy is disabled (priority 0): no instance is written';
      await task.recordHistory({ eventType: 'deploy', severity: 'INFO', event: `deploy steps: ${steps.map((s) => `${s.interface}.${s.step} (${s.priority})`).join(', ') || 'none'}${core}` });
    }
  }
  const { driver } = driverTask;
  for (; index < steps.length; index++) {
    const step = steps[index]!;
    const name = `${step.interface}.${step.step}`;
    await task.update({ driver_internal_info: { ...task.node.driver_internal_info, deploy_step_index: index, deploy_step: step } });
    if (isCoreStep(step)) {
      // The deploy interface's own errors say what failed (`instance_info.kernel …`), as before steps.
      await driver.deploy.validate(driverTask);
      await driver.deploy.prepare(driverTask);
      const outcome = await driver.deploy.deploy(driverTask);
      if (typeof outcome === 'object') {
        return { event: 'wait', changes: { driver_internal_info: { ...task.node.driver_internal_info, ...outcome.internal }, ...(await readPower(driverTask)) } };
      }
      if (outcome === 'wait') return { event: 'wait', changes: await readPower(driverTask) };
    } else {
      try {
        await executeDeployStep(driverTask, step);
      } catch (err) {
        throw new Error(`deploy step ${name} failed: ${(err as Error).message}`, { cause: err });
      }
    }
    // A deploy of the core step alone says no more than the provision moves do.
    if (!coreOnly(steps)) await task.recordHistory({ eventType: 'deploy', severity: 'INFO', event: `deploy step ${name} done` });
  }
  const { deploy_step_index: _i, deploy_step: _s, user_deploy_steps: _u, ...rest } = task.node.driver_internal_info;
  return { event: 'done', changes: { driver_internal_info: rest, ...(await readPower(driverTask)) } };
}
