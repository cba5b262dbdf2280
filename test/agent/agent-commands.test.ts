/** The agent's command helpers: image_info checks, and the log archive a real tar reads. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { commandResult } from '../../src/agent/command-results.js';
import { COMMANDS, parseImageInfo, tarFiles } from '../../src/agent/agent-commands.js';

describe('the agent\'s commands', () => {
  it('checks image_info as IPA does: id, urls, and a digest', () => {
    expect(parseImageInfo({ id: 'i', urls: ['http://x/i.raw'], os_hash_algo: 'sha256', os_hash_value: 'ab' })).toMatchObject({ url: 'http://x/i.raw', algo: 'sha256', digest: 'ab' });
    expect(parseImageInfo({ id: 'i', urls: ['http://x/i.raw'], checksum: 'ff' })).toMatchObject({ algo: 'md5', digest: 'ff' });
    expect(() => parseImageInfo(null)).toThrow('image_info: expected an object');
    expect(() => parseImageInfo({ urls: ['u'], checksum: 'x' })).toThrow('image_info.id: required');
    expect(() => parseImageInfo({ id: 'i', urls: [], checksum: 'x' })).toThrow('image_info.urls');
    expect(() => parseImageInfo({ id: 'i', urls: ['u'] })).toThrow('os_hash_algo and os_hash_value (or checksum) are required');
    expect(() => parseImageInfo({ id: 'i', urls: ['u'], checksum: 'x', disk_format: 'qcow2' })).toThrow('"qcow2" images are not supported by this agent');
  });

  it('packs logs as a tar archive that GNU tar lists and extracts', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ironring-tar-'));
    try {
      const archive = path.join(dir, 'logs.tar.gz');
      writeFileSync(archive, gzipSync(tarFiles([{ name: 'ironring-agent.log', data: Buffer.from('line 1\nline 2\n') }, { name: 'dmesg.txt', data: Buffer.alloc(1000, 0x41) }])));
      const list = spawnSync('tar', ['-tzvf', archive], { encoding: 'utf8' });
      expect(list.status, list.stderr).toBe(0);
      expect(list.stdout).toMatch(/ 14 .* ironring-agent\.log/);
      expect(list.stdout).toMatch(/ 1000 .* dmesg\.txt/);
      const out = spawnSync('tar', ['-xzOf', archive, 'ironring-agent.log'], { encoding: 'utf8' });
      expect(out.stdout).toBe('line 1\nline 2\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses the partition-image boot loader and unknown deploy steps, with messages for last_error', async () => {
    const context = {} as never;
    await expect(COMMANDS['image.install_bootloader']!.run({}, context)).rejects.toThrow('a whole-disk image carries its own');
    // UEFI: a boot entry for the loader of the image written (test/agent/disk/uefi-boot.test.ts); none written yet here.
    await expect(COMMANDS['image.install_bootloader']!.run({ target_boot_mode: 'uefi', efi_system_part_uuid: 'x' }, { lastDevice: null } as never)).rejects.toThrow(
      'no image has been written yet, so there is no loader to register',
    );
    await expect(COMMANDS['deploy.execute_deploy_step']!.run({ step: { step: 'erase_devices' } }, context)).rejects.toThrow('deploy step "erase_devices" is not one this agent runs');
    expect(await COMMANDS['deploy.get_deploy_steps']!.run({}, context)).toMatchObject({ deploy_steps: { GenericHardwareManager: [{ step: 'write_image', interface: 'deploy' }] } });
  });
});

describe('command results as IPA shapes them (what Ironic\'s conductor reads)', () => {
  it('wraps a string as {result} (an asynchronous command\'s prefixed with its method), passes objects through, and null for nothing', () => {
    expect(commandResult('prepare_image', true, 'image (x) written to device /dev/vda')).toEqual({ result: 'prepare_image: image (x) written to device /dev/vda' });
    expect(commandResult('get_partition_uuids', false, 'text')).toEqual({ result: 'text' });
    const steps = { deploy_steps: { GenericHardwareManager: [] }, hardware_manager_version: { generic_hardware_manager: '1.2' } };
    // Ironic's agent_base reads these keys straight off command_result.
    expect(commandResult('get_deploy_steps', false, steps)).toBe(steps);
    expect(commandResult('sync', false, null)).toBeNull();
    expect(commandResult('power_off', true, undefined)).toBeNull();
  });
});
