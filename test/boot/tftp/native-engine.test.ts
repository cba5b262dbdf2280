/**
 * The native transfer engine is built by `npm ci` on Linux; if the build fails, transfers quietly
 * run in JavaScript, so this is where a broken build shows up. (Its behaviour is covered by the
 * protocol and client suites, which run against both engines.)
 */
import { describe, expect, it } from 'vitest';
import { nativeEngine, nativeEngineError } from '../../../src/boot/tftp/native-engine.js';
import { startTftpServer } from '../../../src/boot/tftp/index.js';

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
