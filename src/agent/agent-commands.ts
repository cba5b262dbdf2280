/**
 * What `ironring agent` does for each command of IPA's command API that ironring's `direct` deploy
 * (and Ironic's) sends: the extension methods, with IPA's names, parameters and result shapes.
 *
 * - Asynchronous commands (`standby.prepare_image`, `standby.power_off`,
 *   `deploy.execute_deploy_step`, `clean.execute_clean_step`) answer RUNNING at once and end later; one runs at a time (a
 *   second gets 409, as IPA's "agent is busy").
 * - The others run before the answer. A command's return value becomes its `command_result` as
 *   IPA shapes it (`commandResult` in agent.ts): a string as `{result}`, an object as it is.
 * - A failure is the command's `command_error` — `{type, code, message, details}` — whose message
 *   is what the conductor writes to the node's `last_error`.
 */
import { CommandFailed } from './command-failed.js';
import { finalizeRescue } from './rescue-user.js';
import type { RescueRoots } from './rescue-user.js';
import { spawn } from 'node:child_process';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { InvalidParameter } from '../common/errors.js';
import { chooseRootDevice, decodeConfigDrive, deviceBytes, eraseDeviceMetadata, findDevicesByHints, getPartitionUuids, parseHints, scanBlockDevices, writeConfigDrive, writeImage } from './disk/index.js';
import type { ParsedHint, WriteImageOptions, WriteImageResult } from './disk/index.js';
import { eraseDevice } from './disk/erase-device.js';
import { installUefiBootEntry, UefiBootError } from './disk/uefi-boot.js';

/** A command IPA's API knows, and whether it ends after the answer. */
export interface CommandSpec {
  async: boolean;
  run: (params: Record<string, unknown>, context: CommandContext) => Promise<unknown>;
}

/** What the commands see of the agent: the node it runs for, the disks, how to power off. */
export interface CommandContext {
  /** The node as the lookup answered it (`properties`, `instance_info`). */
  node: { uuid: string; properties: Record<string, unknown>; instance_info: Record<string, unknown> } | null;
  sysRoot: string;
  devRoot: string;
  /** The disk the last image went to, for `get_partition_uuids` and `sync`. */
  lastDevice: string | null;
  setLastDevice(device: string): void;
  /** Options passed to `writeImage` (tests shorten retries). */
  writeOptions: Partial<WriteImageOptions>;
  /** Powers the machine off (after the answer is sent). */
  powerOff(): Promise<void>;
  /** The agent's own log lines, newest last, for `log.collect_system_logs`. */
  logLines(): string[];
  /** Directories standing for /etc and /run (the rescue user, the rescue marker). */
  rescueRoots: RescueRoots;
  /** Told once the rescue user is set: the agent's work on this boot is over. */
  rescued(): void;
  /** Writes a line to the agent's log (its console); absent in tests of one command. */
  log?(line: string): void;
  signal: AbortSignal;
}

export { CommandFailed } from './command-failed.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `image_info` as `standby.prepare_image` gets it, checked: IPA's required keys. */
export function parseImageInfo(value: unknown): { id: string; url: string; algo: string; digest: string; format: string; rootDevice: unknown } {
  if (!isObject(value)) throw new InvalidParameter('image_info: expected an object');
  const { id, urls, os_hash_algo: algo, os_hash_value: digest, checksum, disk_format: format } = value;
  if (typeof id !== 'string' || id === '') throw new InvalidParameter('image_info.id: required');
  if (!Array.isArray(urls) || urls.length === 0 || typeof urls[0] !== 'string') throw new InvalidParameter('image_info.urls: expected a list of URLs');
  if (format !== undefined && format !== null && format !== 'raw') {
    throw new InvalidParameter(`image_info.disk_format: ${JSON.stringify(format)} images are not supported by this agent; it writes raw whole-disk images`);
  }
  let hash: { algo: string; digest: string };
  if (typeof algo === 'string' && typeof digest === 'string' && algo !== '' && digest !== '') hash = { algo, digest };
  else if (typeof checksum === 'string' && checksum !== '') hash = { algo: 'md5', digest: checksum };
  else throw new InvalidParameter('image_info: os_hash_algo and os_hash_value (or checksum) are required');
  return { id, url: urls[0], algo: hash.algo, digest: hash.digest, format: 'raw', rootDevice: value.root_device };
}

async function prepareImage(params: Record<string, unknown>, context: CommandContext): Promise<string> {
  const info = parseImageInfo(params.image_info);
  const configdrive = params.configdrive;
  if (configdrive !== undefined && configdrive !== null && typeof configdrive !== 'string') {
    throw new CommandFailed('configdrive: expected gzipped base64 text or its URL (the JSON form is built by the conductor)', 'InvalidCommandParamsError');
  }
  // Decoded before anything is written: a bad config drive leaves the disk as it was.
  const iso = typeof configdrive === 'string' && configdrive !== '' ? await decodeConfigDrive(configdrive, context.signal) : null;
  const hints = info.rootDevice ?? context.node?.instance_info.root_device ?? context.node?.properties.root_device;
  const scan = await scanBlockDevices({ sysRoot: context.sysRoot, devRoot: context.devRoot });
  const device = chooseRootDevice(scan.devices, hints, { skipped: scan.skipped });
  const result: WriteImageResult = await writeImage({
    ...context.writeOptions,
    url: info.url,
    checksum: { algo: info.algo, value: info.digest },
    device: device.name.replace(/^\/dev/, context.devRoot),
    sysRoot: context.sysRoot,
    signal: context.signal,
    wholeDisk: true,
  });
  context.setLastDevice(device.name);
  let drive = '';
  if (iso !== null) {
    const target = device.name.replace(/^\/dev/, context.devRoot);
    const part = await writeConfigDrive(target, await deviceBytes(target, context.sysRoot), iso);
    drive = `, config drive on partition ${part.number}`;
  }
  let rootUuid = '';
  try {
    rootUuid = (await getPartitionUuids(device.name.replace(/^\/dev/, context.devRoot)))['root uuid'];
  } catch {
    // An image without a partition table still boots nothing we can name; the digest matched.
  }
  return `image (${info.id}) written to device ${device.name} root_uuid=${rootUuid} (${result.bytes} bytes, ${result.algo} verified, ${result.seconds.toFixed(1)} s${drive}; ${timings(result)})`;
}

/** Where a write's time went, for the result line (an operator comparing disks and networks reads it). */
function timings(result: WriteImageResult): string {
  const t = result.timings;
  return `hashing ${t.hash_s.toFixed(1)} s, device writes ${t.write_s.toFixed(1)} s, receive waited ${t.wait_s.toFixed(1)} s for the writer`;
}

async function syncDisks(context: CommandContext): Promise<void> {
  if (context.lastDevice !== null) {
    const handle = await open(context.lastDevice.replace(/^\/dev/, context.devRoot), 'r+');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }
  // The rest of the system's dirty pages, when the ramdisk has a sync(1).
  await new Promise<void>((resolve) => {
    const child = spawn('sync', [], { stdio: 'ignore' });
    child.on('error', () => resolve());
    child.on('exit', () => resolve());
  });
}

/** A ustar archive of `files` (names ≤ 100 bytes), for `log.collect_system_logs`. */
export function tarFiles(files: ReadonlyArray<{ name: string; data: Buffer }>): Buffer {
  const blocks: Buffer[] = [];
  const mtime = Math.floor(Date.now() / 1000);
  for (const file of files) {
    const header = Buffer.alloc(512);
    header.write(file.name.slice(0, 99), 0, 'utf8');
    header.write('0000644\0', 100, 'latin1');
    header.write('0000000\0', 108, 'latin1');
    header.write('0000000\0', 116, 'latin1');
    header.write(`${file.data.length.toString(8).padStart(11, '0')}\0`, 124, 'latin1');
    header.write(`${mtime.toString(8).padStart(11, '0')}\0`, 136, 'latin1');
    header.write('        ', 148, 'latin1');
    header.write('0', 156, 'latin1');
    header.write('ustar\0' + '00', 257, 'latin1');
    let sum = 0;
    for (const byte of header) sum += byte;
    header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
    blocks.push(header, file.data, Buffer.alloc((512 - (file.data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

async function commandOutput(command: string, args: string[]): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    child.stdout.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= 8 * 1024 * 1024) chunks.push(c);
    });
    child.on('error', () => resolve(null));
    child.on('close', () => resolve(Buffer.concat(chunks)));
  });
}

/**
 * IPA's clean steps of its generic hardware manager that this agent runs, at IPA's priorities: the
 * metadata erase (99: automated cleaning runs it) and the full overwrite (10; Ironic's conductor
 * decides with `[deploy] erase_devices_priority`).
 */
const CLEAN_STEPS = [
  { step: 'erase_devices_metadata', priority: 99, interface: 'deploy', reboot_requested: false, abortable: true, argsinfo: null },
  { step: 'erase_devices', priority: 10, interface: 'deploy', reboot_requested: false, abortable: true, argsinfo: null },
];

/**
 * The disks an erase leaves alone: those matching any entry of the node's
 * `properties.skip_block_devices`, a list of root-device-hint objects (IPA's; e.g.
 * `[{"name": "/dev/sdb"}, {"serial": "S3X…"}]`).
 */
function skipHints(params: Record<string, unknown>): ParsedHint[][] {
  const node = isObject(params.node) ? params.node : {};
  const properties = isObject(node.properties) ? node.properties : {};
  const list = properties.skip_block_devices;
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list) || list.length > 64) throw new CommandFailed('node.properties.skip_block_devices: expected a list of at most 64 root device hint objects', 'InvalidCommandParamsError');
  return list.map((entry, i) => {
    try {
      return parseHints(entry);
    } catch (err) {
      throw new CommandFailed(`node.properties.skip_block_devices[${i}]: ${(err as Error).message}`, 'InvalidCommandParamsError');
    }
  });
}

/**
 * Runs `erase` on every disk the agent sees (read-only ones are not listed) but those the node's
 * `skip_block_devices` names, going on past a failed disk and reporting them all at the end, as
 * IPA does.
 */
async function eachDisk(params: Record<string, unknown>, context: CommandContext, what: string, erase: (device: string, name: string) => Promise<void>): Promise<null> {
  const skip = skipHints(params);
  const scan = await scanBlockDevices({ sysRoot: context.sysRoot, devRoot: context.devRoot });
  if (scan.devices.length === 0) throw new CommandFailed(`no disk to erase${scan.skipped.length > 0 ? ` (skipped: ${scan.skipped.map((d) => `${d.name} ${d.reason}`).join(', ')})` : ''}`, 'BlockDeviceEraseError');
  const failures: string[] = [];
  for (const device of scan.devices) {
    context.signal.throwIfAborted();
    if (skip.some((hints) => findDevicesByHints([device], hints).length > 0)) {
      context.log?.(`${what}: ${device.name} skipped (properties.skip_block_devices)`);
      continue;
    }
    try {
      await erase(device.name.replace(/^\/dev/, context.devRoot), device.name);
    } catch (err) {
      if (context.signal.aborted) throw err;
      failures.push(`${device.name}: ${(err as Error).message}`);
    }
  }
  if (failures.length > 0) throw new CommandFailed(`${what} failed on ${failures.join('; ')}`, 'BlockDeviceEraseError');
  return null;
}

/** `erase_devices_metadata` on every disk. */
const eraseMetadata = (params: Record<string, unknown>, context: CommandContext) => eachDisk(params, context, 'erasing the metadata', async (device) => void (await eraseDeviceMetadata(device, context.sysRoot)));

/**
 * `erase_devices` on every disk: the passes Ironic's conductor put in the node's
 * `driver_internal_info` (`agent_erase_devices_iterations`, default 1; `agent_erase_devices_zeroize`,
 * default true), as IPA reads them.
 */
function eraseDevices(params: Record<string, unknown>, context: CommandContext): Promise<null> {
  const node = isObject(params.node) ? params.node : {};
  const info = isObject(node.driver_internal_info) ? node.driver_internal_info : {};
  const iterations = info.agent_erase_devices_iterations ?? 1;
  const zeroize = info.agent_erase_devices_zeroize ?? true;
  if (typeof iterations !== 'number' || !Number.isInteger(iterations) || iterations < 0 || iterations > 10) {
    throw new CommandFailed(`node.driver_internal_info.agent_erase_devices_iterations: ${JSON.stringify(iterations)} is not a whole number from 0 to 10`, 'InvalidCommandParamsError');
  }
  if (typeof zeroize !== 'boolean') throw new CommandFailed('node.driver_internal_info.agent_erase_devices_zeroize: must be true or false', 'InvalidCommandParamsError');
  if (iterations === 0 && !zeroize) throw new CommandFailed('erase_devices with no random pass and no final zeros would erase nothing', 'InvalidCommandParamsError');
  return eachDisk(params, context, 'erasing the disk', async (device, name) => {
    const done = await eraseDevice(device, { iterations, zeroize, signal: context.signal }, context.sysRoot);
    context.log?.(`erase_devices: ${name} overwritten ${done.passes} time(s), ${done.bytes} bytes, in ${done.seconds.toFixed(1)} s`);
  });
}

/** IPA's deploy steps of its generic hardware manager that this agent runs. */
const DEPLOY_STEPS = [{ step: 'write_image', priority: 0, interface: 'deploy', reboot_requested: false, argsinfo: null }];

export const COMMANDS: Readonly<Record<string, CommandSpec>> = {
  'standby.prepare_image': { async: true, run: prepareImage },
  'standby.get_partition_uuids': {
    async: false,
    run: async (_params, context) => {
      if (context.lastDevice === null) throw new CommandFailed('no image has been written yet, so there are no partitions to name', 'DeviceNotFound');
      return getPartitionUuids(context.lastDevice.replace(/^\/dev/, context.devRoot));
    },
  },
  'standby.sync': {
    async: false,
    run: async (_params, context) => {
      await syncDisks(context);
      return null;
    },
  },
  'standby.power_off': {
    async: true,
    run: async (_params, context) => {
      await syncDisks(context);
      await context.powerOff();
      return null;
    },
  },
  'image.install_bootloader': {
    async: false,
    run: async (params, context) => {
      // Ironic asks this for partition images (not written here: refused, never faked), and for
      // whole-disk images in UEFI mode: a firmware boot entry for the image's loader.
      if (params.target_boot_mode !== 'uefi') {
        throw new CommandFailed('installing a boot loader is for partition images, which this agent does not write; a whole-disk image carries its own', 'InvalidCommandError');
      }
      if (context.lastDevice === null) throw new CommandFailed('no image has been written yet, so there is no loader to register', 'DeviceNotFound');
      const device = context.lastDevice.replace(/^\/dev/, context.devRoot);
      const espUuid = typeof params.efi_system_part_uuid === 'string' && params.efi_system_part_uuid !== '' ? params.efi_system_part_uuid : null;
      try {
        const table = await getPartitionUuids(device);
        const handle = await open(device, 'r');
        try {
          const read = async (position: number, length: number) => {
            const buffer = Buffer.alloc(length);
            const { bytesRead } = await handle.read(buffer, 0, length, position);
            if (bytesRead < length) throw new UefiBootError(`${context.lastDevice} ends at byte ${position + bytesRead}`);
            return buffer;
          };
          const entry = await installUefiBootEntry(read, table, espUuid, path.join(context.sysRoot, 'firmware', 'efi', 'efivars'));
          return `${entry.created ? 'added' : 'kept'} UEFI boot entry ${entry.variable} "${entry.label}" for ${entry.path} on ${context.lastDevice}; BootOrder ${entry.bootOrder.join(',')}`;
        } finally {
          await handle.close();
        }
      } catch (err) {
        if (err instanceof CommandFailed) throw err;
        throw new CommandFailed(`registering the UEFI boot entry failed: ${(err as Error).message}`, 'InstallBootloaderError');
      }
    },
  },
  'deploy.get_deploy_steps': {
    async: false,
    run: async () => ({ deploy_steps: { GenericHardwareManager: DEPLOY_STEPS }, hardware_manager_version: { generic_hardware_manager: '1.2' } }),
  },
  'deploy.execute_deploy_step': {
    async: true,
    run: async (params, context) => {
      const step = params.step;
      if (!isObject(step) || step.step !== 'write_image') {
        throw new CommandFailed(`deploy step ${JSON.stringify(isObject(step) ? step.step : step)} is not one this agent runs (it runs write_image)`, 'InvalidCommandParamsError');
      }
      const args = isObject(step.args) ? step.args : {};
      // IPA's answer to a deploy step: what the step returned, and the step.
      return { deploy_result: await prepareImage({ image_info: args.image_info, configdrive: args.configdrive ?? null }, context), deploy_step: step };
    },
  },
  'clean.get_clean_steps': {
    async: false,
    run: async () => ({ clean_steps: { GenericHardwareManager: CLEAN_STEPS }, hardware_manager_version: { generic_hardware_manager: '1.2' } }),
  },
  'clean.execute_clean_step': {
    async: true,
    run: async (params, context) => {
      const step = params.step;
      const name = isObject(step) ? step.step : step;
      if (!isObject(step) || !CLEAN_STEPS.some((s) => s.step === name)) {
        throw new CommandFailed(`clean step ${JSON.stringify(name)} is not one this agent runs (it runs ${CLEAN_STEPS.map((s) => s.step).join(', ')})`, 'InvalidCommandParamsError');
      }
      // IPA's answer to a clean step: what the step returned, and the step.
      return { clean_result: name === 'erase_devices' ? await eraseDevices(params, context) : await eraseMetadata(params, context), clean_step: step };
    },
  },
  'rescue.finalize_rescue': {
    async: false,
    run: async (params, context) => {
      const said = await finalizeRescue(params, context.rescueRoots);
      context.rescued();
      return said;
    },
  },
  'log.collect_system_logs': {
    async: false,
    run: async (_params, context) => {
      const files: Array<{ name: string; data: Buffer }> = [{ name: 'ironring-agent.log', data: Buffer.from(context.logLines().join('\n') + '\n') }];
      const dmesg = await commandOutput('dmesg', []);
      if (dmesg !== null) files.push({ name: 'dmesg.txt', data: dmesg });
      return { system_logs: gzipSync(tarFiles(files)).toString('base64') };
    },
  },
};
