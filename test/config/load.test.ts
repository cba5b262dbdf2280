import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/common/errors.js';
import { envName, loadConfig } from '../../src/config/load.js';
import { OPTIONS, listOptions } from '../../src/config/options.js';
import { effectiveOptions, renderDefaults, renderEffective } from '../../src/config/render.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ironring-config-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function write(text: string): string {
  const file = path.join(dir, 'ironring.toml');
  writeFileSync(file, text);
  return file;
}

function expectConfigError(fn: () => unknown, pattern: RegExp): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toMatch(pattern);
    expect((err as ConfigError).exitCode).toBe(2);
    expect((err as ConfigError).message).not.toContain('\n');
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('gives every option its default when nothing is configured', () => {
    const { config, file, sources } = loadConfig({ env: {}, cwd: dir });
    expect(file).toBeNull();
    expect(config.api.address).toBe('127.0.0.1:6385');
    expect(config.conductor.heartbeat_interval).toBe(10);
    expect(config.conductor.heartbeat_timeout).toBe(60);
    expect(config.conductor.graceful_shutdown_timeout).toBe(60);
    expect(config.conductor.sync_local_state_interval).toBe(180);
    expect(config.DEFAULT.data_dir).toBe(path.join(dir, 'ironring-data'));
    expect(config.pxe.tftp_root).toBe(path.join(dir, 'ironring-data', 'tftpboot'));
    expect(config.database.url).toBe(`sqlite://${path.join(dir, 'ironring-data', 'ironring.db')}`);
    expect(sources['database.url']).toBe('derived');
    expect(sources['api.address']).toBe('default');
  });

  it('reads ./ironring.toml when present and lets environment and flags override it, in that order', () => {
    write('log_level = "debug"\n[api]\naddress = "0.0.0.0:7000"\n[conductor]\nheartbeat_interval = 5\nheartbeat_timeout = 30\n');
    const fileOnly = loadConfig({ env: {}, cwd: dir });
    expect(fileOnly.file).toBe(path.join(dir, 'ironring.toml'));
    expect(fileOnly.config.api.address).toBe('0.0.0.0:7000');
    expect(fileOnly.config.DEFAULT.log_level).toBe('debug');

    const env = { IRONRING_API_ADDRESS: '127.0.0.1:7001', IRONRING_CONDUCTOR_HEARTBEAT_INTERVAL: '3' };
    const withEnv = loadConfig({ env, cwd: dir });
    expect(withEnv.config.api.address).toBe('127.0.0.1:7001');
    expect(withEnv.config.conductor.heartbeat_interval).toBe(3);
    expect(withEnv.config.conductor.heartbeat_timeout).toBe(30);
    expect(withEnv.sources['conductor.heartbeat_interval']).toBe('environment');

    const withFlags = loadConfig({ env, cwd: dir, flags: { 'api.address': '127.0.0.1:7002', 'conductor.heartbeat_interval': undefined } });
    expect(withFlags.config.api.address).toBe('127.0.0.1:7002');
    expect(withFlags.sources['api.address']).toBe('command line');
    expect(withFlags.config.conductor.heartbeat_interval).toBe(3);
  });

  it('takes the file from --config, then IRONRING_CONFIG', () => {
    const other = path.join(dir, 'other.toml');
    writeFileSync(other, '[api]\nmax_limit = 50\n');
    expect(loadConfig({ file: other, env: {}, cwd: dir }).config.api.max_limit).toBe(50);
    expect(loadConfig({ env: { IRONRING_CONFIG: other }, cwd: dir }).config.api.max_limit).toBe(50);
    expectConfigError(() => loadConfig({ file: 'missing.toml', env: {}, cwd: dir }), /missing\.toml: config file not found/);
  });

  it('resolves paths: data_dir against the working directory, the rest against data_dir', () => {
    write('data_dir = "state"\n[pxe]\ntftp_root = "/srv/tftp"\n[deploy]\nhttp_root = "web"\n');
    const { config } = loadConfig({ env: {}, cwd: dir });
    expect(config.DEFAULT.data_dir).toBe(path.join(dir, 'state'));
    expect(config.pxe.tftp_root).toBe('/srv/tftp');
    expect(config.deploy.http_root).toBe(path.join(dir, 'state', 'web'));
  });

  it('lower-cases the conductor group as Ironic does', () => {
    expect(loadConfig({ env: { IRONRING_CONDUCTOR_CONDUCTOR_GROUP: 'Rack-A.1' }, cwd: dir }).config.conductor.conductor_group).toBe('rack-a.1');
  });
});

describe('loadConfig with bad input', () => {
  it('names the file when the TOML does not parse', () => {
    const file = write('[api\naddress = 1\n');
    expectConfigError(() => loadConfig({ env: {}, cwd: dir }), new RegExp(`^${file}: not valid TOML`));
  });

  it('names an unknown section and an unknown key', () => {
    write('[apii]\naddress = "x:1"\n');
    expectConfigError(() => loadConfig({ env: {}, cwd: dir }), /unknown section \[apii\]/);
    write('[api]\nadress = "x:1"\n');
    const err = expectConfigError(() => loadConfig({ env: {}, cwd: dir }), /unknown key \[api\] adress \(known: address/);
    expect(err.key).toBe('api.adress');
    write('colour = "blue"\n');
    expectConfigError(() => loadConfig({ env: {}, cwd: dir }), /unknown top-level key colour/);
  });

  it('names the file, key and expected type for a wrong type', () => {
    const file = write('[conductor]\nheartbeat_interval = "ten"\n');
    expectConfigError(() => loadConfig({ env: {}, cwd: dir }), new RegExp(`^${file}: \\[conductor\\] heartbeat_interval: expected an integer ≥ 1, got "ten"$`));
    write('[conductor]\nheartbeat_interval = 2.5\n');
    expectConfigError(() => loadConfig({ env: {}, cwd: dir }), /heartbeat_interval: expected an integer ≥ 1, got 2\.5/);
    write('[api]\naddress = "localhost"\n');
    expectConfigError(() => loadConfig({ env: {}, cwd: dir }), /\[api\] address: expected an address host:port/);
    write('log_level = "loud"\n');
    expectConfigError(() => loadConfig({ env: {}, cwd: dir }), /log_level: expected one of "trace"/);
    write('[conductor]\nconductor_group = "rack a"\n');
    expectConfigError(() => loadConfig({ env: {}, cwd: dir }), /conductor_group: expected a string \(letters, digits/);
    // Kernel parameters go into boot loader configs: nothing that could end the line or run a command.
    for (const bad of ['ipa-collect-lldp=1;reboot', 'ipa-collect-lldp=1\\nboot', 'nomodeset', 'x=${net0/mac}']) {
      write(`[inspector]\nextra_kernel_params = ${JSON.stringify(bad)}\n`);
      expectConfigError(() => loadConfig({ env: {}, cwd: dir }), /\[inspector\] extra_kernel_params: expected a string \(space-separated key=value words/);
    }
    write('[inspector]\nextra_kernel_params = " ipa-collect-lldp=1  ipa-lldp-timeout=10 "\n');
    expect(loadConfig({ env: {}, cwd: dir }).config.inspector.extra_kernel_params).toBe(' ipa-collect-lldp=1  ipa-lldp-timeout=10 ');
  });

  it('rejects bad environment values and unknown IRONRING_ variables', () => {
    expectConfigError(
      () => loadConfig({ env: { IRONRING_CONDUCTOR_HEARTBEAT_TIMEOUT: 'soon' }, cwd: dir }),
      /^environment IRONRING_CONDUCTOR_HEARTBEAT_TIMEOUT: \[conductor\] heartbeat_timeout: expected an integer ≥ 2/,
    );
    expectConfigError(() => loadConfig({ env: { IRONRING_API_ADRESS: 'x:1' }, cwd: dir }), /unknown variable IRONRING_API_ADRESS/);
  });

  it('rejects bad flag values', () => {
    expectConfigError(() => loadConfig({ env: {}, cwd: dir, flags: { 'api.address': '127.0.0.1:99999' } }), /^command line: \[api\] address/);
  });
});

describe('rendering', () => {
  it('gives each option a distinct environment variable', () => {
    const names = listOptions().map((o) => envName(o.section, o.key));
    expect(new Set(names).size).toBe(names.length);
    expect(envName('database', 'url')).toBe('IRONRING_DATABASE_URL');
    expect(envName('DEFAULT', 'log_level')).toBe('IRONRING_LOG_LEVEL');
  });

  it('prints a sample file that, uncommented, is valid and equal to the defaults', () => {
    const sample = renderDefaults();
    for (const { key, spec } of listOptions()) {
      expect(sample).toContain(`# ${spec.description}`);
      expect(sample).toMatch(new RegExp(`^#${key} = `, 'm'));
    }
    const uncommented = sample.replace(/^#(\w+ = )/gm, '$1');
    const file = write(uncommented);
    const fromSample = loadConfig({ file, env: {}, cwd: dir }).config;
    expect(fromSample).toEqual(loadConfig({ env: {}, cwd: dir }).config);
    expect(Object.keys(parseToml(uncommented))).toEqual([...Object.keys(OPTIONS.DEFAULT), ...Object.keys(OPTIONS).filter((s) => s !== 'DEFAULT')]);
  });

  it('masks the database password in the effective configuration', () => {
    const loaded = loadConfig({ env: { IRONRING_DATABASE_URL: 'postgres://ironring:s3cret@db:5432/ironring' }, cwd: dir });
    expect(loaded.config.database.url).toContain('s3cret');
    const text = renderEffective(loaded);
    expect(text).not.toContain('s3cret');
    expect(text).toContain('url = "postgres://ironring:***@db:5432/ironring"  # from environment');
    const url = effectiveOptions(loaded).find((o) => o.key === 'url');
    expect(url).toMatchObject({ value: 'postgres://ironring:***@db:5432/ironring', source: 'environment' });
  });
});
