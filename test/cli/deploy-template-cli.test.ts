/**
 * `ironring deploy-template list|show|create|set|unset|delete` against a listening API with its
 * conductor in this process, through the same main() that bin/ironring runs: table and JSON output,
 * `--steps` as JSON or a file, the API's refusals as one line and exit code 1, a usage error as 2.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useCliApi } from '../helpers/cli-in-process.js';

const STEPS = [{ interface: 'bios', step: 'apply_configuration', args: { settings: [] }, priority: 150 }];

describe('ironring deploy-template commands', () => {
  const env = useCliApi();
  const cli = (...args: string[]) => env.run('deploy-template', ...args);
  const json = <T = Record<string, unknown>>(...args: string[]) => env.json<T>('deploy-template', ...args);

  it('creates, shows, lists, changes and deletes a deploy template', async () => {
    const made = await json('create', 'CUSTOM_HT_ON', '--steps', JSON.stringify(STEPS), '--extra', 'team=hpc');
    expect(made).toMatchObject({ name: 'CUSTOM_HT_ON', steps: STEPS, extra: { team: 'hpc' } });
    const uuid = made.uuid as string;
    expect(await json('show', 'CUSTOM_HT_ON')).toEqual(made);
    expect(await json('show', uuid)).toEqual(made);
    const table = await cli('show', uuid);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/│ name +│ CUSTOM_HT_ON +│/);

    const dir = mkdtempSync(path.join(tmpdir(), 'ironring-dt-'));
    try {
      const file = path.join(dir, 'steps.json');
      writeFileSync(file, JSON.stringify([{ interface: 'raid', step: 'delete_configuration', args: {}, priority: 10 }]));
      expect(await json('create', 'CUSTOM_RAID_WIPE', '--steps', file, '--uuid', '5e0c9f6e-2a34-4a77-9d0e-0f7b1a2b3c4d')).toMatchObject({ uuid: '5e0c9f6e-2a34-4a77-9d0e-0f7b1a2b3c4d', steps: [{ step: 'delete_configuration' }] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect((await json<Array<{ name: string }>>('list')).map((t) => t.name)).toEqual(['CUSTOM_HT_ON', 'CUSTOM_RAID_WIPE']);
    expect((await cli('list')).stdout).toMatch(new RegExp(`│ ${uuid} +│ CUSTOM_HT_ON +│`));
    expect((await cli('list', '--long')).stdout).toMatch(/Steps.*Extra.*Created At.*Updated At/);

    const reset = [{ interface: 'bios', step: 'factory_reset', args: {}, priority: 5 }];
    expect(await json('set', 'CUSTOM_HT_ON', '--name', 'CUSTOM_HT', '--steps', JSON.stringify(reset), '--extra', 'rack=4')).toMatchObject({ name: 'CUSTOM_HT', steps: reset, extra: { team: 'hpc', rack: 4 } });
    expect(await json('unset', 'CUSTOM_HT', '--extra', 'team')).toMatchObject({ extra: { rack: 4 } });

    const deleted = await cli('delete', 'CUSTOM_HT', 'CUSTOM_RAID_WIPE');
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toBe('Deleted deploy template CUSTOM_HT\nDeleted deploy template CUSTOM_RAID_WIPE\n');
    expect(await json('list')).toEqual([]);
  });

  it("prints the API's refusals as one line with exit code 1, and bad or missing options as usage errors", async () => {
    await json('create', 'CUSTOM_TAKEN', '--steps', JSON.stringify(STEPS));
    const taken = await cli('create', 'CUSTOM_TAKEN', '--steps', JSON.stringify(STEPS));
    expect(taken.code).toBe(1);
    expect(taken.stderr).toBe(`ironring: 409 from ${env.url()}/v1/deploy_templates: a deploy template with name "CUSTOM_TAKEN" already exists\n`);
    const badName = await cli('create', 'not-a-trait', '--steps', JSON.stringify(STEPS));
    expect(badName.code).toBe(1);
    expect(badName.stderr).toMatch(/^ironring: 400 from .*: name: invalid trait "not-a-trait"/);
    const badStep = await cli('set', 'CUSTOM_TAKEN', '--steps', '[{"interface": "vendor", "step": "x", "args": {}, "priority": 1}]');
    expect(badStep.code).toBe(1);
    expect(badStep.stderr).toMatch(/^ironring: 400 from .*: steps\[0\]\.interface: expected one of power, management, deploy, bios, raid/);
    const missing = await cli('show', 'CUSTOM_NOPE');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^ironring: 404 from .*: deploy template CUSTOM_NOPE could not be found\n$/);

    const nothing = await cli('set', 'CUSTOM_TAKEN');
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toBe('ironring: deploy-template set: name at least one field to change (--name, --steps, --extra)\n');
    const notJson = await cli('create', 'CUSTOM_X', '--steps', '[oops');
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toMatch(/^ironring: --steps: invalid JSON/);
    const noFile = await cli('create', 'CUSTOM_X', '--steps', '/nonexistent/steps.json');
    expect(noFile.code).toBe(2);
    expect(noFile.stderr).toMatch(/^ironring: --steps: not JSON, and no file "\/nonexistent\/steps.json" to read/);
    const noSteps = await cli('create', 'CUSTOM_X');
    expect(noSteps.code).not.toBe(0);
    expect(noSteps.stderr).toMatch(/--steps/);
  });
});
