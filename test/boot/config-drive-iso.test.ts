/**
 * The config drive's JSON form built into the ISO (src/boot/config-drive-iso.ts) with the real
 * genisoimage, read back with `isoinfo` (the same package) as a file system: the files cloud-init's ConfigDrive
 * source reads, under both metadata versions, with the node's uuid and name filled in; the checks
 * on the JSON form, and the message when no ISO program is installed.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildConfigDrive, checkConfigDriveSpec } from '../../src/boot/config-drive-iso.js';
import { requirePeer } from '../helpers/peers.js';

const NODE = { uuid: '1be26c0b-03f2-4d2e-ae87-c02d7f33c123', name: 'rack1-n7' };

describe('config drive JSON form: the checks', () => {
  it.each([
    [null, 'configdrive: the JSON form is an object'],
    ['text', 'configdrive: the JSON form is an object'],
    [{ user_data: 'x', meta: {} }, 'configdrive: unexpected key(s) "meta"; valid: meta_data, network_data, user_data, vendor_data'],
    [{ network_data: [] }, 'configdrive.network_data: must be an object'],
    [{ vendor_data: 'v' }, 'configdrive.vendor_data: must be an object'],
    [{ user_data: 42 }, 'configdrive.user_data: must be text, an object or a list'],
  ])('refuses %j', (value, message) => {
    expect(() => checkConfigDriveSpec(value)).toThrow(message);
  });

  it('accepts each key alone, and an empty object', () => {
    for (const value of [{}, { meta_data: {} }, { user_data: '#cloud-config\n' }, { user_data: { a: 1 } }, { user_data: [1] }, { network_data: { links: [] } }, { vendor_data: { k: 'v' } }]) {
      expect(checkConfigDriveSpec(value)).toBe(value);
    }
  });
});

describe.skipIf(!requirePeer('genisoimage', 'genisoimage'))('config drive JSON form: the ISO', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ironring-cd-test-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** The ISO behind the gzipped base64 text, written to a file, and a reader of its files. */
  async function open(text: string): Promise<{ label: string; files: string[]; read(path: string): string }> {
    const iso = join(dir, 'cd.iso');
    await writeFile(iso, gunzipSync(Buffer.from(text, 'base64')));
    const pvd = spawnSync('isoinfo', ['-d', '-i', iso], { encoding: 'utf8' });
    const label = /^Volume id: (.*)$/m.exec(pvd.stdout)?.[1]?.trim() ?? '';
    const listing = spawnSync('isoinfo', ['-R', '-f', '-i', iso], { encoding: 'utf8' });
    return {
      label,
      files: listing.stdout.trim().split('\n').sort(),
      read: (path) => spawnSync('isoinfo', ['-R', '-i', iso, '-x', path], { encoding: 'utf8' }).stdout,
    };
  }

  it('lays out every part under both metadata versions, with the node\'s uuid and name filled in', async () => {
    const network = { links: [{ id: 'eth0', type: 'phy', ethernet_mac_address: '52:54:00:12:34:56' }], networks: [], services: [] };
    const text = await buildConfigDrive(NODE, { meta_data: { hostname: 'web-1', public_keys: { k: 'ssh-ed25519 AAAA' } }, user_data: '#!/bin/sh\necho hello\n', network_data: network, vendor_data: { site: 'ams' } });
    const cd = await open(text);
    expect(cd.label).toBe('config-2');
    const parts = ['meta_data.json', 'network_data.json', 'user_data', 'vendor_data2.json'];
    expect(cd.files).toEqual(
      ['/openstack', '/openstack/2012-08-10', '/openstack/latest', ...['2012-08-10', 'latest'].flatMap((v) => parts.map((p) => `/openstack/${v}/${p}`))].sort(),
    );
    for (const v of ['2012-08-10', 'latest']) {
      expect(JSON.parse(cd.read(`/openstack/${v}/meta_data.json`))).toEqual({ hostname: 'web-1', public_keys: { k: 'ssh-ed25519 AAAA' }, uuid: NODE.uuid, name: NODE.name });
      expect(cd.read(`/openstack/${v}/user_data`)).toBe('#!/bin/sh\necho hello\n');
      expect(JSON.parse(cd.read(`/openstack/${v}/network_data.json`))).toEqual(network);
      expect(JSON.parse(cd.read(`/openstack/${v}/vendor_data2.json`))).toEqual({ site: 'ams' });
    }
  });

  it('keeps a uuid and name the caller gave, writes JSON user data as JSON, and leaves out parts not given', async () => {
    const cd = await open(await buildConfigDrive({ uuid: NODE.uuid, name: null }, { meta_data: { uuid: 'mine', name: 'given' }, user_data: { packages: ['nginx'] } }));
    expect(cd.files).toEqual(['/openstack', '/openstack/2012-08-10', '/openstack/2012-08-10/meta_data.json', '/openstack/2012-08-10/user_data', '/openstack/latest', '/openstack/latest/meta_data.json', '/openstack/latest/user_data']);
    expect(JSON.parse(cd.read('/openstack/latest/meta_data.json'))).toEqual({ uuid: 'mine', name: 'given' });
    expect(JSON.parse(cd.read('/openstack/latest/user_data'))).toEqual({ packages: ['nginx'] });
    // An unnamed node gets no name.
    const bare = await open(await buildConfigDrive({ uuid: NODE.uuid, name: null }, {}));
    expect(JSON.parse(bare.read('/openstack/latest/meta_data.json'))).toEqual({ uuid: NODE.uuid });
  });

  it('names the field at fault and the missing program', async () => {
    await expect(buildConfigDrive(NODE, { userdata: 'x' }, { field: 'instance_info.configdrive' })).rejects.toThrow('instance_info.configdrive: unexpected key(s) "userdata"');
    await expect(buildConfigDrive(NODE, {}, { isoTool: 'ironring-no-such-iso-tool' })).rejects.toThrow('no ISO 9660 program to build the config drive (tried ironring-no-such-iso-tool; Debian: genisoimage or xorriso)');
  });
});
