/** `ironring agent`, `ironring ramdisk build` and `node deploy --image/--config-drive`: bad input gets one line and exit 2. */
import { describe, expect, it } from 'vitest';
import { configDriveInstanceInfo, imageInstanceInfo } from '../../src/cli/commands/node.js';
import { runCli } from '../helpers/cli.js';

const DIGEST = 'ab'.repeat(32);

describe('ironring node deploy --image', () => {
  it('sets image_source and the digest before deploying', () => {
    expect(imageInstanceInfo('http://images/x.raw', `sha256:${DIGEST.toUpperCase()}`)).toEqual([
      { op: 'add', path: '/instance_info/image_source', value: 'http://images/x.raw' },
      { op: 'add', path: '/instance_info/image_os_hash_algo', value: 'sha256' },
      { op: 'add', path: '/instance_info/image_os_hash_value', value: DIGEST },
    ]);
    expect(imageInstanceInfo(undefined, undefined)).toEqual([]);
  });

  it('sets the config drive\'s JSON form as instance_info/configdrive (the conductor builds the ISO)', () => {
    const drive = { meta_data: { hostname: 'web-1' }, user_data: '#cloud-config\n' };
    expect(configDriveInstanceInfo(JSON.stringify(drive))).toEqual([{ op: 'add', path: '/instance_info/configdrive', value: drive }]);
    expect(configDriveInstanceInfo(undefined)).toEqual([]);
  });

  it.each([
    [['--config-drive', '{"user_data": '], '--config-drive: not valid JSON'],
    [['--config-drive', '{"userdata": "x"}'], '--config-drive: unexpected key(s) "userdata"; valid: meta_data, network_data, user_data, vendor_data'],
    [['--config-drive', '@/nonexistent/cd.json'], '--config-drive: cannot read /nonexistent/cd.json: ENOENT'],
    [['--image', 'ftp://x/y.raw', '--image-checksum', `sha256:${DIGEST}`], '--image: expected an http:// or https:// URL'],
    [['--image', 'http://x/y.raw'], '--image-checksum: required with --image'],
    [['--image', 'http://x/y.raw', '--image-checksum', `md5:${'a'.repeat(32)}`], '--image-checksum: expected sha256:<64 hex>'],
    [['--image-checksum', `sha256:${DIGEST}`], '--image-checksum: only with --image'],
  ])('refuses %j before calling the API', (args, message) => {
    const res = runCli(['node', 'deploy', 'n1', ...args, '--url', 'http://127.0.0.1:9']);
    expect(res.code, res.stderr).toBe(2);
    expect(res.stderr).toContain(message);
    expect(res.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('ironring agent', () => {
  it.each([
    [['--api-url', 'not a url'], '--api-url: "not a url" is not a URL'],
    [['--api-url', 'ftp://x'], '--api-url: expected an http:// or https:// URL'],
    [['--api-url', 'http://x', '--mac', 'zz'], '--mac: "zz" is not a MAC address'],
    [['--api-url', 'http://x', '--listen', 'nowhere'], '--listen: expected host:port'],
  ])('refuses %j with one line and exit 2', (args, message) => {
    const res = runCli(['agent', ...args]);
    expect(res.code, res.stderr).toBe(2);
    expect(res.stderr).toContain(message);
  });
});

describe('ironring ramdisk build', () => {
  it('refuses a bad compression level before building anything', () => {
    const res = runCli(['ramdisk', 'build', '--output', '/nonexistent/x', '--level', '30']);
    expect(res.code, res.stderr).toBe(2);
    expect(res.stderr).toContain('--level: expected a whole number from 1 to 19');
  });
});
