/**
 * The client commands against an API with `auth_strategy = "http_basic"` (issue #14, follow-up of
 * items 2/4): a real `ironring up` with an htpasswd file, and the real `ironring` CLI. Without
 * credentials every client command exits 1 with one line saying how to give them; with
 * `--os-username`/`--os-password`, `OS_USERNAME`/`OS_PASSWORD` or the config file's `[baremetal]`
 * pair they work; the password is never printed; too many failures print the Retry-After.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli } from '../helpers/cli.js';
import type { CliProcess, CliResult } from '../helpers/cli.js';

const PASSWORD = 'pw-Zq8v-never-printed';

/** Every client command, each with arguments that succeed on an empty cluster. */
const CLIENT_COMMANDS = [
  ['node', 'list'],
  ['port', 'list'],
  ['conductor', 'list'],
  ['ring', 'show'],
  ['server', 'list'],
  ['compute', 'list'],
];

describe('client commands against an http_basic API (ironring up)', () => {
  let dir: string;
  let up: CliProcess;
  let url: string;
  let configFile: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'ironring-cli-credentials-'));
    writeFileSync(path.join(dir, 'htpasswd'), `admin:${bcrypt.hashSync(PASSWORD, 4)}\n`);
    configFile = path.join(dir, 'client.toml');
    writeFileSync(configFile, `[baremetal]\nusername = "admin"\npassword = "${PASSWORD}"\n`);
    up = startCli(
      ['up', '--data-dir', dir, '--api-address', '127.0.0.1:0', '--rpc-address', '127.0.0.1:0', '--tftp-address', '127.0.0.1:0', '--http-address', '127.0.0.1:0', '--host', 'aio'],
      {
        cwd: dir,
        env: {
          IRONRING_AUTH_STRATEGY: 'http_basic',
          // up's own compute service talks to the API with these.
          IRONRING_BAREMETAL_USERNAME: 'admin',
          IRONRING_BAREMETAL_PASSWORD: PASSWORD,
          IRONRING_API_LOGIN_FAILURE_LIMIT: '3',
        },
      },
    );
    url = (await up.waitForOutput(/API: +(http:\/\/127\.0\.0\.1:\d+)\/v1/, 30_000))[1]!;
  }, 60_000);
  afterAll(async () => {
    up?.child.kill('SIGTERM');
    await up?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  /** The CLI from a directory without ironring.toml, so only what the test gives counts. */
  const cli = (args: string[], env: Record<string, string> = {}): CliResult => runCli([...args, '--url', url], { cwd: dir, env: { OS_USERNAME: '', OS_PASSWORD: '', ...env } });
  const expectNoPassword = (res: CliResult) => expect(res.stdout + res.stderr).not.toContain(PASSWORD);

  it('without credentials, every client command exits 1 with one line naming how to give them', () => {
    for (const args of CLIENT_COMMANDS) {
      const res = runCli([...args, '--url', url], { cwd: dir });
      expect(res.code, `${args.join(' ')}: ${res.stderr}`).toBe(1);
      expect(res.stdout).toBe('');
      expect(res.stderr).toMatch(
        new RegExp(
          `^ironring: authentication failed: the API at ${url.replace(/\./g, '\\.')} requires credentials \\(authentication required: .*\\); ` +
            'give credentials with --os-username and --os-password, OS_USERNAME and OS_PASSWORD, or \\[baremetal\\] username and password in the config file\\n$',
        ),
      );
    }
  });

  it('with --os-username/--os-password every client command works, including node verbs and --wait', () => {
    const creds = ['--os-username', 'admin', '--os-password', PASSWORD];
    for (const args of CLIENT_COMMANDS) {
      const res = cli([...args, ...creds]);
      expect(res.code, `${args.join(' ')}: ${res.stderr}`).toBe(0);
      expectNoPassword(res);
    }
    const created = cli(['node', 'create', '--driver', 'fake-hardware', '--name', 'auth-1', '--format', 'json', ...creds]);
    expect(created.code, created.stderr).toBe(0);
    expect(cli(['port', 'create', '52:54:00:00:0a:01', '--node', 'auth-1', ...creds]).code).toBe(0);
    // --wait polls with the same credentials.
    const managed = cli(['node', 'manage', 'auth-1', '--wait', '30', '--format', 'json', ...creds]);
    expect(managed.code, managed.stderr).toBe(0);
    expect(JSON.parse(managed.stdout)).toMatchObject({ name: 'auth-1', provision_state: 'manageable' });
    const shown = cli(['node', 'show', 'auth-1', '--format', 'json', ...creds]);
    expect(JSON.parse(shown.stdout)).toMatchObject({ provision_state: 'manageable' });
  });

  it('takes OS_USERNAME/OS_PASSWORD from the environment, else [baremetal] username/password from the config file', () => {
    const fromEnv = cli(['node', 'show', 'auth-1', '--format', 'json'], { OS_USERNAME: 'admin', OS_PASSWORD: PASSWORD });
    expect(fromEnv.code, fromEnv.stderr).toBe(0);
    expect(JSON.parse(fromEnv.stdout)).toMatchObject({ name: 'auth-1' });
    const fromConfig = cli(['node', 'list', '--format', 'json', '-c', configFile]);
    expect(fromConfig.code, fromConfig.stderr).toBe(0);
    expect((JSON.parse(fromConfig.stdout) as Array<{ name: string }>).map((n) => n.name)).toEqual(['auth-1']);
    // A user without a password is a usage error, before anything is sent.
    const half = cli(['node', 'list'], { OS_USERNAME: 'admin' });
    expect(half.code).toBe(2);
    expect(half.stderr).toBe('ironring: OS_USERNAME is set but no password: add --os-password or set OS_PASSWORD\n');
  });

  it('never prints the password: not in --help, not in config show, not in a --url with credentials', () => {
    const help = cli(['node', 'list', '--help'], { OS_USERNAME: 'admin', OS_PASSWORD: PASSWORD });
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/--os-password <password>[\s\S]*\(env: OS_PASSWORD\)/);
    expectNoPassword(help);
    const shown = runCli(['config', 'show', '-c', configFile], { cwd: dir });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/\[baremetal\][\s\S]*username = "admin"/);
    expectNoPassword(shown);
    const inUrl = runCli(['node', 'list', '--url', url.replace('http://', `http://admin:${PASSWORD}@`)], { cwd: dir });
    expect(inUrl.code).toBe(2);
    expect(inUrl.stderr).toMatch(/^ironring: --url must not contain credentials: give credentials with --os-username/);
    expectNoPassword(inUrl);
  });

  // Last: the failures it makes lock 127.0.0.1 out for the login window.
  it('a wrong password is one line naming the user and where it came from; too many print the Retry-After', () => {
    const wrong = cli(['node', 'list', '--os-username', 'admin', '--os-password', 'not-it']);
    expect(wrong.code).toBe(1);
    expect(wrong.stdout).toBe('');
    expect(wrong.stderr).toMatch(/^ironring: authentication failed: the API at \S+ refused user "admin" \(from --os-username and --os-password\) \(the credentials are not valid\); give credentials with --os-username and --os-password, OS_USERNAME and OS_PASSWORD, or \[baremetal\] username and password in the config file\n$/);
    const viaEnv = cli(['node', 'list'], { OS_USERNAME: 'admin', OS_PASSWORD: 'not-it-either' });
    expect(viaEnv.stderr).toMatch(/refused user "admin" \(from OS_USERNAME and OS_PASSWORD\)/);
    let limited: CliResult | undefined;
    for (let i = 0; i < 5 && limited === undefined; i++) {
      const res = cli(['node', 'list'], { OS_USERNAME: 'admin', OS_PASSWORD: `guess-${i}` });
      expect(res.code).toBe(1);
      if (!res.stderr.includes('authentication failed')) limited = res;
    }
    expect(limited?.stderr).toMatch(/^ironring: 429 from \S+\/v1\/nodes\?detail=True: too many failed logins from 127\.0\.0\.1; try again in \d+ s \(Retry-After: \d+ s\)\n$/);
    // Even the right password waits out the window: the CLI says so rather than "authentication failed".
    const right = cli(['node', 'list', '--os-username', 'admin', '--os-password', PASSWORD]);
    expect(right.code).toBe(1);
    expect(right.stderr).toMatch(/^ironring: 429 .*\(Retry-After: \d+ s\)\n$/);
    expectNoPassword(right);
  });
});
