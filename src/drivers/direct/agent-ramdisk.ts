/**
 * Booting the deploy ramdisk with its agent, shared by the interfaces that drive it: the direct
 * deploy (deploying, cleaning) and the agent inspection. The kernel parameters say where the agent
 * looks up (`ipa-api-url`) and, while the node is being inspected, where it posts its inventory
 * (`ipa-inspection-callback-url`, Ironic's `{api}/v1/continue_inspection`), so that a take-over
 * rebuilds the same files from the node's state alone.
 */
import { InvalidParameterValue } from '../errors.js';
import type { DriverTask } from '../task.js';

/** The kernel parameter naming the inventory's destination (IPA's). */
export const INSPECTION_CALLBACK_PARAM = 'ipa-inspection-callback-url';

/** States in which the agent inspects the machine it boots on. */
const INSPECTION_STATES: ReadonlySet<string> = new Set(['inspecting', 'inspect wait']);

/** The API URL agents reach; `InvalidParameterValue` naming the setting when there is none. */
export function requireAgentApiUrl(url: string | null): string {
  if (url === null || url === '') {
    throw new InvalidParameterValue('[deploy] agent_api_url', 'is not set and cannot be derived ([api] public_endpoint is empty): the deploy agent would not know where to look up and heartbeat');
  }
  return url;
}

/** `key=value` words (`[inspector] extra_kernel_params`, checked by the config's pattern) as a map. */
export function kernelParamWords(line: string): Record<string, string> {
  const params: Record<string, string> = {};
  for (const word of line.trim().split(/\s+/)) {
    const eq = word.indexOf('=');
    if (eq > 0) params[word.slice(0, eq)] = word.slice(eq + 1);
  }
  return params;
}

/**
 * The ramdisk's kernel parameters for a node in `state`; `inspection` (`[inspector]
 * extra_kernel_params`) is added while it inspects, never over the agent's own two.
 */
export function agentRamdiskParams(apiUrl: string, state: string | undefined, inspection: Readonly<Record<string, string>> = {}): Record<string, string> {
  const params: Record<string, string> = { 'ipa-api-url': apiUrl };
  if (state !== undefined && INSPECTION_STATES.has(state)) {
    Object.assign(params, inspection, { 'ipa-api-url': apiUrl });
    params[INSPECTION_CALLBACK_PARAM] = `${apiUrl.replace(/\/+$/, '').replace(/\/v1$/, '')}/v1/continue_inspection`;
  }
  return params;
}

/**
 * Boots the deploy ramdisk: its boot files with the parameters for the node's state, the network
 * once, power on (or reboot). The session of an agent that ran before ends first, so the new one
 * can look up.
 */
export async function bootAgentRamdisk(task: DriverTask, apiUrl: string, inspection: Readonly<Record<string, string>> = {}): Promise<void> {
  const { boot, management, power } = task.driver;
  await task.forgetAgent?.();
  await boot.prepareRamdisk(task, agentRamdiskParams(apiUrl, task.node.provision_state, inspection));
  await management.setBootDevice(task, 'pxe', false);
  if ((await power.getPowerState(task)) === 'power on') await power.reboot(task);
  else await power.setPowerState(task, 'power on');
}
