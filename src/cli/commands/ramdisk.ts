/** `ironring ramdisk build`: the deploy ramdisk (kernel + initramfs) that runs `ironring agent`. */
import { Command, Option } from 'commander';
import { UsageError } from '../../common/errors.js';
import { emit, formatOption } from '../output.js';
import type { OutputFormat } from '../output.js';
import { renderRecord } from '../output.js';

export function ramdiskCommand(): Command {
  const ramdisk = new Command('ramdisk').summary('build the deploy ramdisk').description('Build the deploy ramdisk that boots machines into ironring agent for the direct deploy.');
  ramdisk.addCommand(
    new Command('build')
      .summary('build deploy.kernel and deploy.initramfs into a directory')
      .description(
        'Build the deploy ramdisk from Debian packages: the cloud kernel (downloaded with apt-get download; ' +
          'or --kernel-deb), busybox-static, this machine\'s node with its libraries, and ironring\'s compiled agent. ' +
          'Needs dpkg-deb, strip (binutils), ldd, zstd and xz. Writes <output>/deploy.kernel and <output>/deploy.initramfs; ' +
          'set them (with their sha256 checksums) as driver_info.deploy_kernel / deploy_ramdisk. See docs/deploy.md.',
      )
      .requiredOption('-o, --output <dir>', 'directory to write deploy.kernel and deploy.initramfs into')
      .addOption(new Option('--kernel-deb <file>', 'a linux-image-*.deb to take the kernel and modules from (default: the current cloud kernel)'))
      .addOption(new Option('--level <n>', 'zstd compression level, 1-19').default('12'))
      .addOption(formatOption())
      .action(async (opts: { output: string; kernelDeb?: string; level: string; format: OutputFormat }) => {
        const level = Number(opts.level);
        if (!Number.isInteger(level) || level < 1 || level > 19) throw new UsageError('--level: expected a whole number from 1 to 19');
        const { buildRamdisk } = await import('../../ramdisk/build.js');
        const { createHash } = await import('node:crypto');
        const { readFileSync } = await import('node:fs');
        const result = buildRamdisk({
          output: opts.output,
          level,
          ...(opts.kernelDeb ? { kernelDeb: opts.kernelDeb } : {}),
          log: (line) => process.stderr.write(`${line}\n`),
        });
        const sha = (file: string) => `sha256:${createHash('sha256').update(readFileSync(file)).digest('hex')}`;
        const out = { ...result, kernel_checksum: sha(result.kernel), initramfs_checksum: sha(result.initramfs) };
        emit(opts.format, out, () => renderRecord({ ...out, modules: result.modules.join(' ') }));
      }),
  );
  return ramdisk;
}
