import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli } from '../helpers/cli.js';
import type { CliProcess } from '../helpers/cli.js';

describe('ironring node and port commands against ironring up', () => {
  let dir: string;
  let up: CliProcess;
  let url: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'ironring-node-cli-'));
    up = startCli(
      ['up', '--data-dir', dir, '--api-address', '127.0.0.1:0', '--rpc-address', '127.0.0.1:0', '--tftp-address', '127.0.0.1:0', '--http-address', '127.0.0.1:0', '--host', 'aio'],
      { cwd: dir },
    );
    url = (await up.waitForOutput(/API: +(http:\/\/127\.0\.0\.1:\d+)\/v1/))[1]!;
  });
  afterAll(async () => {
    up.child.kill('SIGTERM');
    await up.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  const cli = (...args: string[]) => runCli([...args, '--url', url]);
  const json = (...args: string[]) => {
    const res = cli(...args, '--format', 'json');
    expect(res.code, `${args.join(' ')}: ${res.stderr}`).toBe(0);
    return JSON.parse(res.stdout) as Record<string, unknown>;
  };

  it('enrolls, changes, deploys, powers and deletes a fake-hardware node with its port', () => {
    const created = json('node', 'create', '--driver', 'fake-hardware', '--name', 'cli-1', '--driver-info', 'ipmi_address=10.1.1.1', '--property', 'cpus=8');
    expect(created).toMatchObject({ name: 'cli-1', provision_state: 'enroll' });
    expect(json('port', 'create', '52:54:00:00:00:01', '--node', 'cli-1')).toMatchObject({ address: '52:54:00:00:00:01', node_uuid: created.uuid });

    const set = json('node', 'set', 'cli-1', '--extra', 'rack=r7', '--property', 'memory_mb=4096');
    expect(set).toMatchObject({ extra: { rack: 'r7' }, properties: { cpus: 8, memory_mb: 4096 } });
    expect(json('node', 'unset', 'cli-1', '--property', 'cpus')).toMatchObject({ properties: { memory_mb: 4096 } });

    expect(json('node', 'manage', 'cli-1', '--wait', '30')).toMatchObject({ provision_state: 'manageable' });
    expect(json('node', 'provide', 'cli-1', '--wait', '30')).toMatchObject({ provision_state: 'available' });
    expect(json('node', 'deploy', 'cli-1', '--wait', '30')).toMatchObject({ provision_state: 'active' });
    expect(cli('node', 'power', 'on', 'cli-1').code).toBe(0);
    expect(cli('node', 'boot-device', 'set', 'cli-1', 'pxe', '--persistent').code).toBe(0);
    expect(json('node', 'boot-device', 'show', 'cli-1')).toEqual({ boot_device: 'pxe', persistent: true });

    const list = cli('node', 'list');
    expect(list.stdout).toMatch(/│ cli-1 +│ +│ [^│]+│ active +│ false +│/);
    const refused = cli('node', 'delete', 'cli-1');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^ironring: 409 from .*cannot be deleted in provision state "active"/);

    expect(json('node', 'undeploy', 'cli-1', '--wait', '30')).toMatchObject({ provision_state: 'available' });
    expect((json('port', 'list', '--node', 'cli-1') as unknown as Array<{ address: string }>).map((p) => p.address)).toEqual(['52:54:00:00:00:01']);
    expect(cli('port', 'delete', '52:54:00:00:00:01').code).toBe(0);
    expect(cli('node', 'delete', 'cli-1').stdout).toBe('Deleted node cli-1\n');
    expect(cli('node', 'show', 'cli-1').stderr).toBe(`ironring: 404 from ${url}/v1/nodes/cli-1: node cli-1 could not be found\n`);
  });

  it('answers bad flags with one line and exit code 2', () => {
    const res = cli('node', 'create', '--driver', 'fake-hardware', '--property', 'novalue');
    expect(res.code).toBe(2);
    expect(res.stderr).toBe('ironring: --property: expected key=value, got "novalue"\n');
    const power = cli('node', 'power', 'sideways', 'x');
    expect(power.code).toBe(2);
  });
});
