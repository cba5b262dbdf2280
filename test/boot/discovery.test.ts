/**
 * The discovery boot entries in real boot roots: prepared like a node's deploy ramdisk under the
 * reserved uuids, found by PXELINUX and GRUB as their fall-back configs, invisible to the reconciler
 * (`listPrepared`) and to the sweep, and removed without touching an operator's own default files.
 * And the decisions the ProxyDHCP responder gets for unknown machines.
 */
import { readFile, readlink, symlink, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BootEnvironment } from '../../src/boot/boot-environment.js';
import { DISCOVERY_UUIDS, DiscoveryAnswers, isDiscoveryUuid, prepareDiscoveryBoot, removeDiscoveryBoot } from '../../src/boot/discovery.js';
import type { BootImages } from '../../src/boot/types.js';
import { MAC_A, UUID_A, sandbox, tree } from './helpers.js';
import type { BootSandbox } from './helpers.js';

const PARAMS = 'ipa-api-url=http://10.0.0.5:6385 ipa-inspection-callback-url=http://10.0.0.5:6385/v1/continue_inspection';

let s: BootSandbox;
let env: BootEnvironment;
let images: Required<BootImages>;

beforeEach(async () => {
  s = await sandbox();
  env = s.env();
  images = await s.images();
});
afterEach(async () => s.dispose());

describe('discovery boot entries', () => {
  it('are deploy-ramdisk entries with the inspection callback, found through pxelinux.cfg/default, grub.cfg and the iPXE script URL', async () => {
    const prepared = await prepareDiscoveryBoot(env, s.tftpRoot, { images, kernelParams: PARAMS, formats: ['pxelinux', 'grub', 'ipxe'] });
    expect(prepared).toEqual(['pxelinux', 'grub', 'ipxe']);
    const pxelinux = await readFile(join(s.tftpRoot, 'pxelinux.cfg', 'default'), 'utf8');
    expect(pxelinux).toContain(`${DISCOVERY_UUIDS.pxelinux}/deploy_kernel`);
    expect(pxelinux).toContain('ipa-inspection-callback-url=http://10.0.0.5:6385/v1/continue_inspection');
    expect(pxelinux).toContain('ipappend 2');
    expect(await readlink(join(s.tftpRoot, 'pxelinux.cfg', 'default'))).toBe(`../${DISCOVERY_UUIDS.pxelinux}/config`);
    const grub = await readFile(join(s.tftpRoot, 'grub.cfg'), 'utf8');
    expect(grub).toContain(`${DISCOVERY_UUIDS.grub}/deploy_kernel`);
    expect(grub).toContain('ipa-api-url=http://10.0.0.5:6385');
    const ipxe = await readFile(join(s.httpRoot, DISCOVERY_UUIDS.ipxe, 'config'), 'utf8');
    expect(ipxe).toContain(`http://10.0.0.5:8080/${DISCOVERY_UUIDS.ipxe}/deploy_kernel`);
    expect(await readFile(join(s.tftpRoot, DISCOVERY_UUIDS.pxelinux, 'deploy_ramdisk'), 'utf8')).toBe('deploy ramdisk bytes');
    // Not nodes: the reconciler neither takes them over nor removes them as orphans.
    await env.prepare({ uuid: UUID_A }, [{ address: MAC_A, pxeEnabled: true }], images);
    expect(await env.listPrepared()).toEqual([UUID_A]);
    // Preparing again changes nothing; a sweep leaves them.
    const before = await tree(s.tftpRoot);
    await prepareDiscoveryBoot(env, s.tftpRoot, { images, kernelParams: PARAMS, formats: ['pxelinux', 'grub', 'ipxe'] });
    const swept = await env.sweep({ minTempAgeMs: 0 });
    expect(swept.danglingLinks).toEqual([]);
    expect(await tree(s.tftpRoot)).toEqual(before);
  });

  it('are removed with their fall-back links, leaving the nodes and an operator\'s own default config alone', async () => {
    await env.prepare({ uuid: UUID_A }, [{ address: MAC_A, pxeEnabled: true }], images);
    await prepareDiscoveryBoot(env, s.tftpRoot, { images, kernelParams: PARAMS, formats: ['pxelinux', 'grub'] });
    // The operator replaced GRUB's fall-back with their own file: it stays.
    await mkdir(join(s.tftpRoot, 'site'), { recursive: true });
    await symlink('site/grub.cfg', join(s.tftpRoot, 'grub.cfg.new'));
    const { rename } = await import('node:fs/promises');
    await rename(join(s.tftpRoot, 'grub.cfg.new'), join(s.tftpRoot, 'grub.cfg'));
    await removeDiscoveryBoot(env, s.tftpRoot);
    const left = await tree(s.tftpRoot);
    expect(left.some((p) => p.includes('d15c'))).toBe(false);
    expect(left).not.toContain('pxelinux.cfg/default');
    expect(left).toContain('grub.cfg');
    expect(left).toContain(`${UUID_A}/config`);
    expect(await env.listPrepared()).toEqual([UUID_A]);
  });

  it('reserves uuids no node generator makes (version nibble 0), in any case', () => {
    for (const uuid of Object.values(DISCOVERY_UUIDS)) {
      expect(isDiscoveryUuid(uuid.toUpperCase())).toBe(true);
      expect(uuid[14]).toBe('0');
    }
    expect(isDiscoveryUuid(UUID_A)).toBe(false);
  });
});

describe('DiscoveryAnswers', () => {
  it('asks the resolver once per MAC for 10 s, answers only when armed, and names the iPXE script for an iPXE entry', async () => {
    let now = 1_000_000;
    const asked: string[] = [];
    const answers = new DiscoveryAnswers(() => now);
    expect(await answers.lookup(MAC_A)).toBeUndefined();
    answers.arm(async (mac) => {
      asked.push(mac);
      return true;
    }, 'ipxe');
    expect(await answers.lookup(MAC_A)).toEqual({ uuid: DISCOVERY_UUIDS.ipxe, bootMode: 'bios', bootInterface: 'ipxe', ipxeScript: `${DISCOVERY_UUIDS.ipxe}/config` });
    now += 9_000;
    await answers.lookup(MAC_A);
    expect(asked).toEqual([MAC_A]);
    now += 2_000;
    await answers.lookup(MAC_A);
    expect(asked).toEqual([MAC_A, MAC_A]);
    // A ring change forgets the decisions.
    answers.forget();
    await answers.lookup(MAC_A);
    expect(asked).toHaveLength(3);
    answers.arm(async () => false, 'pxe');
    expect(await answers.lookup(MAC_A)).toBeUndefined();
    answers.arm(async () => true, 'pxe');
    expect(await answers.lookup(MAC_A)).toEqual({ uuid: DISCOVERY_UUIDS.pxelinux, bootMode: 'bios', bootInterface: 'pxe' });
    answers.disarm();
    expect(answers.armed).toBe(false);
    expect(await answers.lookup(MAC_A)).toBeUndefined();
  });
});
