/**
 * The native transfer engine is built by `npm ci` on Linux; if the build fails, transfers quietly
 * run in JavaScript, so this is where a broken build shows up. (Its behaviour is covered by the
 * protocol and client suites, which run against both engines.)
 */
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

  it('can be required by a server (engine "native" refuses to start without it)', async () => {
    const server = await startTftpServer({ root: '.', address: '127.0.0.1:0', engine: 'native' });
    await server.close();
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
