/**
 * A machine as `ironring agent` sees it, for tests that run the agent in-process: a directory
 * standing for /sys with one virtio disk `vda` (its size, rotational and read-only flags) and one
 * for /dev where that disk is a regular file filled with `fill` — what the agent writes to.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface FakeMachine {
  sysRoot: string;
  devRoot: string;
  /** The file standing for /dev/vda. */
  disk: string;
}

export async function fakeMachine(root: string, diskBytes: number, fill = 0x11): Promise<FakeMachine> {
  const block = join(root, 'sys', 'block', 'vda');
  await mkdir(join(block, 'queue'), { recursive: true });
  await writeFile(join(block, 'size'), `${diskBytes / 512}\n`);
  await writeFile(join(block, 'queue', 'rotational'), '1\n');
  await writeFile(join(block, 'ro'), '0\n');
  await mkdir(join(root, 'dev'), { recursive: true });
  const disk = join(root, 'dev', 'vda');
  await writeFile(disk, Buffer.alloc(diskBytes, fill));
  return { sysRoot: join(root, 'sys'), devRoot: join(root, 'dev'), disk };
}
