import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cleanEnv, runCli, startCli } from '../helpers/cli.js';
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

  it('sets and resets every interface with node set / unset --<type>-interface', () => {
    json('node', 'create', '--driver', 'fake-hardware', '--name', 'cli-if');
    const set = json('node', 'set', 'cli-if', '--boot-interface', 'pxe', '--deploy-interface', 'ramdisk', '--console-interface', 'fake', '--inspect-interface', 'fake', '--rescue-interface', 'fake', '--vendor-interface', 'fake', '--network-interface', 'noop', '--power-interface', 'fake', '--management-interface', 'fake');
    expect(set).toMatchObject({ boot_interface: 'pxe', deploy_interface: 'ramdisk', console_interface: 'fake', inspect_interface: 'fake', rescue_interface: 'fake', vendor_interface: 'fake', network_interface: 'noop', power_interface: 'fake', management_interface: 'fake' });
    // The table names what changed.
    const table = cli('node', 'set', 'cli-if', '--boot-interface', 'ipxe');
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/boot_interface\s*│?\s*ipxe/);

    // An implementation the hardware type does not support: the API's 400 naming the valid ones, nothing stored.
    const refused = cli('node', 'set', 'cli-if', '--power-interface', 'ipmitool');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^ironring: 400 from .*ipmitool.*fake/);
    expect(json('node', 'show', 'cli-if')).toMatchObject({ power_interface: 'fake', boot_interface: 'ipxe' });

    // unset goes back to the hardware type's defaults.
    expect(json('node', 'unset', 'cli-if', '--boot-interface', '--deploy-interface')).toMatchObject({ boot_interface: 'fake', deploy_interface: 'fake' });
    // And the hardware type itself, with interfaces it supports; the node's fake bios and raid
    // interfaces, which ipmi does not enable, are refused unless reset (API 1.45, as Ironic).
    const kept = cli('node', 'set', 'cli-if', '--driver', 'ipmi', '--power-interface', 'ipmitool', '--management-interface', 'ipmitool');
    expect(kept.code).toBe(1);
    expect(kept.stderr).toMatch(/^ironring: 400 from .*_interface "fake" is not enabled for driver ipmi.*reset_interfaces/);
    expect(json('node', 'set', 'cli-if', '--reset-interfaces', '--driver', 'ipmi', '--power-interface', 'ipmitool', '--management-interface', 'ipmitool', '--boot-interface', 'pxe', '--deploy-interface', 'ramdisk', '--console-interface', 'no-console', '--inspect-interface', 'no-inspect', '--rescue-interface', 'no-rescue', '--vendor-interface', 'no-vendor')).toMatchObject({ driver: 'ipmi', power_interface: 'ipmitool', boot_interface: 'pxe' });
    expect(cli('node', 'delete', 'cli-if').code).toBe(0);
  });

  it('documents the interface flags in node set --help', () => {
    const help = cli('node', 'set', '--help');
    expect(help.code).toBe(0);
    for (const type of ['boot', 'console', 'deploy', 'inspect', 'management', 'network', 'power', 'rescue', 'vendor']) {
      expect(help.stdout).toMatch(new RegExp(`--${type}-interface <name> +${type} interface implementation: `));
    }
    expect(help.stdout).toContain('--driver <driver>');
    expect(help.stdout).toMatch(/--reset-interfaces +with --driver: reset every interface/);
    expect(help.stdout).toContain('docs/driver-fields.md');
    expect(cli('node', 'unset', '--help').stdout).toMatch(/--boot-interface +reset the boot interface to the hardware type's/);
  });

  it('inspects, adopts, rescues (password from standard input) and unrescues a node; inventory says when there is none', () => {
    json('node', 'create', '--driver', 'fake-hardware', '--name', 'cli-verbs', '--inspect-interface', 'fake', '--rescue-interface', 'fake');
    json('node', 'manage', 'cli-verbs', '--wait', '30');
    expect(json('node', 'inspect', 'cli-verbs', '--wait', '30')).toMatchObject({ provision_state: 'manageable', last_error: null });
    // The fake inspection stores no inventory: the API's 404, on one line.
    const none = cli('node', 'inventory', 'cli-verbs');
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/^ironring: 404 from .*Inventory not found for node [0-9a-f-]{36}\.\n$/);
    expect(json('node', 'adopt', 'cli-verbs', '--wait', '30')).toMatchObject({ provision_state: 'active' });
    const missing = cli('node', 'rescue', 'cli-verbs');
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('--rescue-password');
    const piped = spawnSync(process.execPath, [BIN, 'node', 'rescue', 'cli-verbs', '--rescue-password', '-', '--wait', '30', '--format', 'json', '--url', url], { input: 'pa ss\n', encoding: 'utf8', env: cleanEnv() });
    expect(piped.status, piped.stderr).toBe(0);
    expect(JSON.parse(piped.stdout)).toMatchObject({ provision_state: 'rescue' });
    expect(json('node', 'unrescue', 'cli-verbs', '--wait', '30')).toMatchObject({ provision_state: 'active' });
  });

  it('cleans a manageable node with --clean-steps given as JSON, @file or standard input', () => {
    json('node', 'create', '--driver', 'fake-hardware', '--name', 'cli-clean');
    json('node', 'manage', 'cli-clean', '--wait', '30');
    const one = [{ interface: 'deploy', step: 'erase_devices_metadata' }];
    const cleaned = json('node', 'clean', 'cli-clean', '--clean-steps', JSON.stringify(one), '--wait', '30');
    // The fake deploy interface offers these steps; the node records exactly the ones that ran.
    expect(cleaned).toMatchObject({ provision_state: 'manageable', last_error: null, driver_internal_info: { clean_steps: one } });

    const both = [{ interface: 'deploy', step: 'erase_devices' }, { interface: 'deploy', step: 'erase_devices_metadata', args: {} }];
    const file = path.join(dir, 'steps.json');
    writeFileSync(file, JSON.stringify(both));
    expect(json('node', 'clean', 'cli-clean', '--clean-steps', `@${file}`, '--wait', '30')).toMatchObject({ provision_state: 'manageable', driver_internal_info: { clean_steps: both } });

    const piped = spawnSync(process.execPath, [BIN, 'node', 'clean', 'cli-clean', '--clean-steps', '-', '--wait', '30', '--format', 'json', '--url', url], { input: JSON.stringify(one), encoding: 'utf8', env: cleanEnv() });
    expect(piped.status, piped.stderr).toBe(0);
    expect(JSON.parse(piped.stdout)).toMatchObject({ provision_state: 'manageable', driver_internal_info: { clean_steps: one } });

    // A step no interface of the node offers: the API's 400, naming what the interface offers.
    const unsupported = cli('node', 'clean', 'cli-clean', '--clean-steps', '[{"interface": "deploy", "step": "erase_everything"}]');
    expect(unsupported.code).toBe(1);
    expect(unsupported.stderr).toMatch(/^ironring: 400 from .*does not support this clean step.*erase_everything.*offers erase_devices_metadata, erase_devices/);
    expect(json('node', 'show', 'cli-clean')).toMatchObject({ provision_state: 'manageable', driver_internal_info: { clean_steps: one } });

    // --disable-ramdisk (API 1.70): the fake steps run in the ramdisk, so the API refuses them, naming the step.
    const noRamdisk = cli('node', 'clean', 'cli-clean', '--clean-steps', JSON.stringify(one), '--disable-ramdisk');
    expect(noRamdisk.code).toBe(1);
    expect(noRamdisk.stderr).toMatch(/^ironring: 400 from .*with disable_ramdisk, clean step deploy\.erase_devices_metadata requires booting a ramdisk/);
    expect(cli('node', 'clean', '--help').stdout).toMatch(/--disable-ramdisk +clean without booting the ramdisk/);
  });

  it('refuses bad --clean-steps locally with one line and exit code 2, sending nothing', () => {
    json('node', 'create', '--driver', 'fake-hardware', '--name', 'cli-clean-bad');
    json('node', 'manage', 'cli-clean-bad', '--wait', '30');
    const bad: Array<[string, string]> = [
      ['[{"interface": "deploy", "step": ', 'ironring: --clean-steps: not valid JSON ('],
      ['{"interface": "deploy", "step": "erase_devices"}', 'ironring: --clean-steps: expected a non-empty list of {"interface", "step", "args"} objects\n'],
      ['[]', 'ironring: --clean-steps: expected a non-empty list of {"interface", "step", "args"} objects\n'],
      ['[{"interface": "deploy"}]', 'ironring: --clean-steps[0].step: required, a string\n'],
      ['[{"interface": "deploy", "step": "erase_devices", "priority": 5}]', 'ironring: --clean-steps[0]: unexpected key "priority"; allowed: interface, step, args\n'],
      [`@${path.join(dir, 'no-such-steps.json')}`, `ironring: --clean-steps: cannot read ${path.join(dir, 'no-such-steps.json')}: ENOENT\n`],
    ];
    for (const [steps, message] of bad) {
      const res = cli('node', 'clean', 'cli-clean-bad', '--clean-steps', steps);
      expect(res.code, steps).toBe(2);
      expect(res.stderr.startsWith(message), `${steps}: ${res.stderr}`).toBe(true);
      expect(res.stderr.split('\n')).toHaveLength(2);
    }
    // Without --clean-steps, as `baremetal node clean`: a usage error naming the option.
    const missing = cli('node', 'clean', 'cli-clean-bad');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/required option '--clean-steps <steps>' not specified/);
    const n = json('node', 'show', 'cli-clean-bad');
    expect(n).toMatchObject({ provision_state: 'manageable', target_provision_state: null, clean_step: {} });
    expect((n.driver_internal_info as Record<string, unknown>).clean_steps).toBeUndefined();
  });

  it('lists, adds, removes and sets traits; an invalid one gets the API\'s message and exit 1', () => {
    json('node', 'create', '--driver', 'fake-hardware', '--name', 'cli-traits');
    expect(cli('node', 'trait', 'add', 'cli-traits', 'CUSTOM_GPU', 'CUSTOM_RACK_7').stdout).toBe('Added CUSTOM_GPU, CUSTOM_RACK_7 to node cli-traits\n');
    expect(json('node', 'trait', 'list', 'cli-traits')).toEqual(['CUSTOM_GPU', 'CUSTOM_RACK_7']);
    expect(cli('node', 'trait', 'list', 'cli-traits').stdout).toMatch(/│ Traits +│\n[^]*│ CUSTOM_GPU +│/);
    expect(cli('node', 'trait', 'remove', 'cli-traits', 'CUSTOM_GPU').code).toBe(0);
    expect(cli('node', 'trait', 'set', 'cli-traits', 'HW_CPU_X86_VMX', 'CUSTOM_X').code).toBe(0);
    expect(json('node', 'trait', 'list', 'cli-traits')).toEqual(['CUSTOM_X', 'HW_CPU_X86_VMX']);
    const bad = cli('node', 'trait', 'add', 'cli-traits', 'gpu');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^ironring: 400 from .*trait: invalid trait "gpu"/);
    const both = cli('node', 'trait', 'remove', 'cli-traits', 'CUSTOM_X', '--all');
    expect([both.code, both.stderr]).toEqual([2, 'ironring: give the traits to remove, or --all (not both)\n']);
    expect(cli('node', 'trait', 'remove', 'cli-traits', '--all').code).toBe(0);
    expect(json('node', 'trait', 'list', 'cli-traits')).toEqual([]);
  });

  it('answers bad flags with one line and exit code 2', () => {
    const res = cli('node', 'create', '--driver', 'fake-hardware', '--property', 'novalue');
    expect(res.code).toBe(2);
    expect(res.stderr).toBe('ironring: --property: expected key=value, got "novalue"\n');
    const power = cli('node', 'power', 'sideways', 'x');
    expect(power.code).toBe(2);
  });
});
