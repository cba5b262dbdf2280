/**
 * IPA's `erase_devices` clean step, as its fallback does it when a disk offers no secure erase
 * (`shred`): every byte of the disk overwritten `iterations` times with random data, then once with
 * zeros (`zeroize`) — Ironic's `[deploy] shred_random_overwrite_iterations` (1) and
 * `shred_final_overwrite_with_zeros` (true), which its conductor hands the agent in the node's
 * `driver_internal_info` (`agent_erase_devices_iterations`, `agent_erase_devices_zeroize`).
 * ATA secure erase and NVMe format are not tried (the ramdisk has no hdparm or nvme-cli): every
 * disk gets the overwrite, which is what they would do too, only slower.
 *
 * Each pass writes 4 MiB blocks from the start to the last byte, then syncs; the disk is then read
 * back at a few places (its first and last blocks, and every 64th in between) and must hold what
 * the last pass wrote, or the step fails: an erase that did not happen is never reported.
 */
import { randomFillSync } from 'node:crypto';
import { open } from 'node:fs/promises';
import { deviceBytes } from './image-writer.js';

const BLOCK = 4 * 1024 * 1024;
/** Read back every this many blocks (and the first and last). */
const CHECK_EVERY = 64;

export interface EraseOptions {
  /** Random passes (`agent_erase_devices_iterations`); 0–10. */
  iterations: number;
  /** A final pass of zeros (`agent_erase_devices_zeroize`). */
  zeroize: boolean;
  signal?: AbortSignal;
  /** Told after each pass: its number (from 1), the passes in all, the seconds it took. */
  progress?: (pass: number, passes: number, seconds: number) => void;
}

export interface ErasedDevice {
  device: string;
  bytes: number;
  passes: number;
  seconds: number;
}

/** Overwrites all of `device` (a block device or, in tests, a file); see the file comment. */
export async function eraseDevice(device: string, options: EraseOptions, sysRoot = '/sys'): Promise<ErasedDevice> {
  if (!Number.isInteger(options.iterations) || options.iterations < 0 || options.iterations > 10) throw new RangeError(`iterations: ${options.iterations} is not a whole number from 0 to 10`);
  const passes = options.iterations + (options.zeroize ? 1 : 0);
  if (passes === 0) throw new RangeError('nothing to do: no random pass and no final zeros (Ironic refuses this setting too)');
  const bytes = await deviceBytes(device, sysRoot);
  const started = Date.now();
  const block = Buffer.alloc(BLOCK);
  const handle = await open(device, 'r+');
  try {
    for (let pass = 1; pass <= passes; pass++) {
      const passStarted = Date.now();
      const zeros = options.zeroize && pass === passes;
      if (zeros) block.fill(0);
      for (let offset = 0; offset < bytes; offset += BLOCK) {
        options.signal?.throwIfAborted();
        const length = Math.min(BLOCK, bytes - offset);
        if (!zeros) randomFillSync(block, 0, length);
        let done = 0;
        while (done < length) {
          const { bytesWritten } = await handle.write(block, done, length - done, offset + done);
          if (bytesWritten <= 0) throw new Error(`${device} accepted no bytes at offset ${offset + done}`);
          done += bytesWritten;
        }
      }
      await handle.sync();
      options.progress?.(pass, passes, (Date.now() - passStarted) / 1000);
    }
    if (options.zeroize) await checkZeros(handle, device, bytes);
  } finally {
    await handle.close();
  }
  return { device, bytes, passes, seconds: (Date.now() - started) / 1000 };
}

/** Reads back the first and last blocks and every `CHECK_EVERY`th: all zeros, or the erase failed. */
async function checkZeros(handle: Awaited<ReturnType<typeof open>>, device: string, bytes: number): Promise<void> {
  const buffer = Buffer.alloc(BLOCK);
  const blocks = Math.ceil(bytes / BLOCK);
  for (let i = 0; i < blocks; i++) {
    if (i !== 0 && i !== blocks - 1 && i % CHECK_EVERY !== 0) continue;
    const offset = i * BLOCK;
    const length = Math.min(BLOCK, bytes - offset);
    const { bytesRead } = await handle.read(buffer, 0, length, offset);
    if (bytesRead !== length || buffer.subarray(0, length).some((b) => b !== 0)) {
      throw new Error(`${device} does not read back as zeros at bytes ${offset}–${offset + length} after the erase`);
    }
  }
}
