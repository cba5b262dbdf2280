/**
 * The native transfer engine is built by `npm ci` on Linux; if the build fails, transfers quietly
 * run in JavaScript, so this is where a broken build shows up. (Its behaviour is covered by the
 * protocol and client suites, which run against both engines.)
 */
import { spawnSync } from 'node:child_process';
import Database from 'better-sqlite3';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeEngine, nativeEngineError } from '../../../src/boot/tftp/native-engine.js';
import { startTftpServer } from '../../../src/boot/tftp/index.js';
import { CONFIG, MAC_LINK, runClient, startFixture, until } from './helpers.js';
import type { Fixture } from './helpers.js';
import { requirePeer } from '../../helpers/peers.js';

const CURL = requirePeer('curl', 'curl');

describe('native TFTP engine', () => {
  it('is built and loads', () => {
    const engine = nativeEngine();
    expect(engine, `not loaded: ${nativeEngineError()}`).not.toBeNull();
    expect(typeof engine!.start).toBe('function');
    expect(typeof engine!.abort).toBe('function');
  });

  it('rejects bad arguments with an error rather than crashing the process', () => {
    const engine = nativeEngine()!;
    const noop = (): void => {};
    expect(() => engine.start(-1, 0, 0, 512, 1, 1000, 5, null, 0, noop)).toThrow('start: argument out of range');
    expect(() => engine.start(3, 4, 0, 4, 1, 1000, 5, null, 0, noop)).toThrow('start: argument out of range');
    expect(() => engine.abort({}, 0, 'x')).toThrow('abort: bad argument');
  });

  it('can be required by a server', async () => {
    const server = await startTftpServer({ root: '.', address: '127.0.0.1:0', engine: 'native' });
    await server.close();
  });
});

describe('an installation without the native engine', () => {
  // This package without build/: bin/ and dist/ copied (the add-on is looked up relative to the
  // real path of dist/), node_modules linked.
  const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
  let dir: string;
  let file: string;
  let db: string;
  const ironring = (args: string[], engine: string) =>
    spawnSync(process.execPath, [path.join(dir, 'bin/ironring'), ...args], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, IRONRING_PXE_TFTP_ENGINE: engine },
    });
  const conductor = (engine: string, host: string) =>
    ironring(['conductor', '--host', host, '--database', db, '--data-dir', path.join(dir, host), '--rpc-address', '127.0.0.1:0', '--tftp-address', '127.0.0.1:0', '--http-address', '127.0.0.1:0'], engine);

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'ironring-no-native-'));
    mkdirSync(path.join(dir, 'bin'));
    cpSync(path.join(ROOT, 'bin/ironring'), path.join(dir, 'bin/ironring'));
    cpSync(path.join(ROOT, 'dist'), path.join(dir, 'dist'), { recursive: true });
    cpSync(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'));
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    file = path.join(dir, 'ironring.db');
    db = `sqlite://${file}`;
    expect(ironring(['manage', 'db', 'migrate', '--database', db], 'auto').status).toBe(0);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses [pxe] tftp_engine = "native" in one line naming the fix, exit code 2, starting nothing', () => {
    const res = conductor('native', 'c1');
    expect(res.stderr.trim().split('\n').at(-1)).toBe(
      'ironring: the native TFTP engine is not built (Cannot find module \'../../../build/Release/tftp_engine.node\'): build it with a C compiler ("npm run build:native" in a checkout, "npm rebuild ironring" for a package), or set [pxe] tftp_engine = "js"',
    );
    expect(res.stderr).not.toMatch(/internal error|\n +at /);
    expect(res.status).toBe(2);
    const sqlite = new Database(file, { readonly: true });
    try {
      expect(sqlite.prepare('SELECT hostname FROM conductors').all()).toEqual([]);
    } finally {
      sqlite.close();
    }
  });
});

describe.skipIf(!CURL)('many short native transfers', () => {
  let fx: Fixture;
  beforeAll(async () => {
    // 20 curls at once from 127.0.0.1: above the per-client cap of 8 (a real PXE client needs one or two).
    fx = await startFixture({ engine: 'native', maxTransfersPerClient: 32 });
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  it('hands every outcome back to JavaScript intact, 300 configs fetched by curl 20 at a time', async () => {
    // Many thread hand-overs in a row. (A race in that hand-over once aborted a conductor; the
    // take-over scenario test, where the event loop is idle and takes reports at once, showed it.)
    let next = 0;
    const bad: string[] = [];
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (next < 300) {
          next += 1;
          const res = await runClient('curl', ['-sS', '--fail', `tftp://127.0.0.1:${fx.port}/${MAC_LINK}`]);
          if (res.code !== 0 || res.stdout.toString() !== CONFIG) bad.push(`${res.code}: ${res.stderr}`);
        }
      }),
    );
    expect(bad).toEqual([]);
    await until(() => fx.server.stats().active === 0);
    expect(fx.server.stats()).toMatchObject({ started: 300, completed: 300, failed: 0, active: 0 });
  });
});
