/**
 * The real machine: a qemu command line (TCG, one virtio NIC with the iPXE ROM on the lab's tap
 * device, serial console to a file, network boot first), BIOS or UEFI (OVMF), and reading what it
 * printed. The virtual BMC (test/drivers/bmc-simulator.ts) runs the command on power on.
 */
import { copyFileSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { MARKER } from './assets.js';

/** The NIC's ROM (ipxe-qemu): BIOS and EFI iPXE in one image, as qemu's default for virtio-net. */
export const VIRTIO_ROM = '/usr/lib/ipxe/qemu/efi-virtio.rom';
export const OVMF_CODE = '/usr/share/OVMF/OVMF_CODE_4M.fd';
export const OVMF_VARS = '/usr/share/OVMF/OVMF_VARS_4M.fd';

export type Firmware = 'bios' | 'uefi';

export interface VmSpec {
  /** Short name, used for its files in `dir`. */
  name: string;
  /** Directory for its serial log, pid file and UEFI variable store. */
  dir: string;
  tap: string;
  mac: string;
  firmware: Firmware;
  memoryMiB?: number;
  /** Virtual CPUs (qemu `-smp`; under TCG each runs on a host thread). Default 1. */
  cpus?: number;
  /**
   * BIOS: milliseconds SeaBIOS waits after "No bootable device" before it reboots (qemu's
   * `-boot reboot-timeout`; with -no-reboot the VM then exits). Unset: SeaBIOS's default, it stays
   * there for good — as many real BIOSes do when no PXE server answered.
   */
  rebootTimeoutMs?: number;
  /**
   * Raw disk image files, attached as virtio disks in order (`/dev/vda`, `/dev/vdb`…), each with
   * the serial number given (what root device hints match), if any; `readOnly`: the guest sees a
   * read-only disk.
   */
  disks?: Array<string | { file: string; serial?: string; readOnly?: boolean }>;
  /**
   * MACs of further virtio NICs, after the lab's: each on qemu's user-mode network (its own DHCP
   * server, nothing else reachable), with no boot ROM, so the machine never network-boots from them.
   */
  extraNics?: string[];
}

/** A VM's command and files. */
export interface Vm {
  spec: VmSpec;
  /** qemu's argv: what the BMC's power on runs. */
  command: string[];
  /** The serial console. qemu truncates it when it starts. */
  serialLog: string;
  /** qemu's pid file (`<name>.qemu.pid`: a crashed run's VM is found and killed by it). */
  pidFile: string;
  /** Removes the serial log so that a wait sees only the next boot. */
  clearLog(): void;
}

export function defineVm(spec: VmSpec): Vm {
  if (!/^[a-z0-9-]{1,20}$/.test(spec.name)) throw new Error(`vm name ${JSON.stringify(spec.name)}: lower-case letters, digits and dashes`);
  if (!/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/.test(spec.mac)) throw new Error(`vm mac ${JSON.stringify(spec.mac)} is not a lower-case MAC address`);
  if (spec.rebootTimeoutMs !== undefined && (!Number.isInteger(spec.rebootTimeoutMs) || spec.rebootTimeoutMs < 0 || spec.rebootTimeoutMs > 65535)) {
    throw new Error(`vm rebootTimeoutMs ${spec.rebootTimeoutMs}: an integer in 0–65535 (qemu's limit)`);
  }
  const serialLog = path.join(spec.dir, `${spec.name}.serial.log`);
  const pidFile = path.join(spec.dir, `${spec.name}.qemu.pid`);
  const command = [
    'qemu-system-x86_64',
    // KVM hangs on this machine kind; TCG boots the ramdisk in seconds.
    '-machine', 'accel=tcg',
    '-m', String(spec.memoryMiB ?? 512),
    '-smp', String(spec.cpus ?? 1),
    // -nographic: SeaBIOS and iPXE print to the serial console too (with -display none they do not).
    '-nographic',
    '-monitor', 'none',
    '-no-reboot',
    '-boot', spec.rebootTimeoutMs === undefined ? 'n' : `order=n,reboot-timeout=${spec.rebootTimeoutMs}`,
    '-netdev', `tap,id=n0,ifname=${spec.tap},script=no,downscript=no`,
    // BIOS: the NIC's iPXE ROM boots it. disable-legacy: the ROM's PCI header names the modern
    // virtio-net id (1af4:1041); SeaBIOS runs no ROM whose id differs from the device's, and the
    // default transitional device is 1af4:1000. UEFI: no ROM, so that OVMF's own virtio-net driver
    // and PXE client boot it as a UEFI machine without iPXE firmware does: DHCP gives it the iPXE EFI
    // chain loader (snponly.efi) over TFTP, which then gets boot.ipxe over HTTP.
    '-device', `virtio-net-pci,netdev=n0,mac=${spec.mac},${spec.firmware === 'bios' ? `disable-legacy=on,romfile=${VIRTIO_ROM}` : 'romfile='}`,
    '-serial', `file:${serialLog}`,
    '-pidfile', pidFile,
    // Entropy at boot: without it node waits over a second in getrandom in the deploy ramdisk.
    '-device', 'virtio-rng-pci',
  ];
  for (const [i, mac] of (spec.extraNics ?? []).entries()) {
    if (!/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/.test(mac)) throw new Error(`extra NIC ${JSON.stringify(mac)} is not a lower-case MAC address`);
    command.push('-netdev', `user,id=x${i},restrict=on`, '-device', `virtio-net-pci,netdev=x${i},mac=${mac},romfile=`);
  }
  for (const [i, disk] of (spec.disks ?? []).entries()) {
    const { file, serial, readOnly } = typeof disk === 'string' ? { file: disk, serial: undefined, readOnly: false } : disk;
    if (serial !== undefined && !/^[A-Za-z0-9-]{1,20}$/.test(serial)) throw new Error(`disk serial ${JSON.stringify(serial)}: letters, digits and dashes, at most 20`);
    // The serial number is the device's property (qemu no longer takes it on -drive).
    command.push('-drive', `file=${file},format=raw,if=none,id=disk${i},cache=unsafe${readOnly === true ? ',readonly=on' : ''}`, '-device', `virtio-blk-pci,drive=disk${i}${serial === undefined ? '' : `,serial=${serial}`}`);
  }
  if (spec.firmware === 'uefi') {
    // A private copy of the variable store: OVMF writes its boot entries into it.
    const vars = path.join(spec.dir, `${spec.name}.ovmf-vars.fd`);
    copyFileSync(OVMF_VARS, vars);
    command.push('-drive', `if=pflash,format=raw,unit=0,readonly=on,file=${OVMF_CODE}`, '-drive', `if=pflash,format=raw,unit=1,file=${vars}`);
  }
  return { spec, command, serialLog, pidFile, clearLog: () => rmSync(serialLog, { force: true }) };
}

function readOrEmpty(file: string): string {
  try {
    return readFileSync(file, 'latin1');
  } catch {
    return '';
  }
}

/**
 * Polls `serialLog` until `pattern` matches (the file may not exist yet); resolves to the match and
 * how long it took. On timeout the error carries the log's last lines, which say where the boot stopped.
 */
export async function waitForMarker(serialLog: string, pattern: RegExp, timeoutMs: number): Promise<{ match: RegExpMatchArray; ms: number }> {
  const started = Date.now();
  for (;;) {
    const match = pattern.exec(readOrEmpty(serialLog));
    if (match) return { match, ms: Date.now() - started };
    if (Date.now() - started > timeoutMs) {
      // eslint-disable-next-line no-control-regex -- the console's escape sequences make the tail unreadable
      const tail = readOrEmpty(serialLog).replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').split(/\r?\n/).slice(-15).join('\n');
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${pattern} in ${serialLog}; its last lines:\n${tail}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The marker line's kernel command line, as a pattern: `NODE-BOOTED cmdline=<rest of the line>`. */
export const MARKER_LINE = new RegExp(`${MARKER} cmdline=([^\\r\\n]*)\\r?\\n`);

/** Waits for the marker and returns the command line the ramdisk saw, split into parameters. */
export async function waitForBoot(serialLog: string, timeoutMs: number): Promise<{ params: string[]; ms: number }> {
  const { match, ms } = await waitForMarker(serialLog, MARKER_LINE, timeoutMs);
  return { params: (match[1] ?? '').trim().split(/\s+/), ms };
}
