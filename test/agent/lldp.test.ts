/**
 * LLDP as the agent collects it (`ipa-collect-lldp`): the frame parser, the kernel parameters, the
 * collection with a stand-in listener, and the packet-socket add-on (native/lldp_listen.c) on a real
 * veth pair in a network namespace, frames sent from its other end (root only; skipped with a
 * printed reason elsewhere, required under CI).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { collectLldp, lldpListenerError, lldpSettings, nativeLldp, parseLldpFrame } from '../../src/agent/lldp.js';
import { requirePeerGroup } from '../helpers/peers.js';

const tlv = (type: number, value: Buffer) => Buffer.concat([Buffer.from([(type << 1) | (value.length >> 8), value.length & 0xff]), value]);
/** An LLDP frame as a switch sends it: to 01:80:c2:00:00:0e, chassis MAC, port name, TTL, system name, End, padding. */
function lldpFrame(port: string): Buffer {
  const body = Buffer.concat([
    tlv(1, Buffer.from('04aabbccddeeff', 'hex')),
    tlv(2, Buffer.concat([Buffer.from([5]), Buffer.from(port)])),
    tlv(3, Buffer.from('0078', 'hex')),
    tlv(5, Buffer.from('switch-a')),
    tlv(0, Buffer.alloc(0)),
    Buffer.alloc(8),
  ]);
  return Buffer.concat([Buffer.from('0180c200000e020000000001', 'hex'), Buffer.from('88cc', 'hex'), body]);
}

describe('parseLldpFrame', () => {
  it('gives [type, hex] pairs up to End of LLDPDU, leaving the padding out', () => {
    expect(parseLldpFrame(lldpFrame('Ethernet1/7'))).toEqual([
      [1, '04aabbccddeeff'],
      [2, `05${Buffer.from('Ethernet1/7').toString('hex')}`],
      [3, '0078'],
      [5, Buffer.from('switch-a').toString('hex')],
      [0, ''],
    ]);
  });

  it('gives nothing for a frame of another ethertype or too short, and cuts a TLV running past the end', () => {
    const ip = Buffer.from(lldpFrame('x'));
    ip.writeUInt16BE(0x0800, 12);
    expect(parseLldpFrame(ip)).toEqual([]);
    expect(parseLldpFrame(Buffer.alloc(10))).toEqual([]);
    const cut = Buffer.concat([Buffer.from('0180c200000e020000000001', 'hex'), Buffer.from('88cc', 'hex'), Buffer.from([0x0a, 0x10]), Buffer.from('abc')]);
    expect(parseLldpFrame(cut)).toEqual([[5, Buffer.from('abc').toString('hex')]]);
  });
});

describe('lldpSettings', () => {
  it("reads IPA's ipa-collect-lldp and ipa-lldp-timeout", () => {
    expect(lldpSettings(new Map())).toBeNull();
    expect(lldpSettings(new Map([['ipa-collect-lldp', '0']]))).toBeNull();
    expect(lldpSettings(new Map([['ipa-collect-lldp', '1']]))).toEqual({ timeoutSeconds: 30 });
    expect(lldpSettings(new Map([['ipa-collect-lldp', 'True'], ['ipa-lldp-timeout', '2.5']]))).toEqual({ timeoutSeconds: 2.5 });
    expect(lldpSettings(new Map([['ipa-collect-lldp', '1'], ['ipa-lldp-timeout', 'soon']]))).toEqual({ timeoutSeconds: 30 });
    expect(lldpSettings(new Map([['ipa-collect-lldp', '1'], ['ipa-lldp-timeout', '99999']]))).toEqual({ timeoutSeconds: 600 });
  });
});

describe('collectLldp', () => {
  it('maps each interface to its TLVs, [] when nothing came or it could not listen, and logs why', async () => {
    const lines: string[] = [];
    const asked: Array<[string[], number]> = [];
    const result = await collectLldp(['eth0', 'eth1', 'eth0', 'gone'], {
      timeoutSeconds: 1.5,
      log: (line) => lines.push(line),
      listen: async (names, timeoutMs) => {
        asked.push([names, timeoutMs]);
        return [{ frame: lldpFrame('p1'), error: null }, { frame: null, error: null }, { frame: null, error: 'no such interface: No such device' }];
      },
    });
    expect(asked).toEqual([[['eth0', 'eth1', 'gone'], 1500]]);
    expect(result!.eth0![1]).toEqual([2, `05${Buffer.from('p1').toString('hex')}`]);
    expect(result!.eth1).toEqual([]);
    expect(result!.gone).toEqual([]);
    expect(lines).toContain('LLDP on gone: no such interface: No such device');
    expect(lines.at(-1)).toBe('LLDP heard on 1 of 3 interfaces (eth0)');
  });
});

const here = path.dirname(fileURLToPath(import.meta.url));
const ADDON = path.resolve(here, '../../build/Release/lldp_listen.node');

describe('the packet socket add-on', () => {
  it('is built and loads, and refuses bad arguments with an error', () => {
    const addon = nativeLldp();
    expect(addon, `not loaded: ${lldpListenerError()}`).not.toBeNull();
    expect(() => addon!.listen('eth0' as unknown as string[], 10)).toThrow('names must be an array');
    expect(() => addon!.listen(['eth0'], -1)).toThrow('timeoutMs must be 0 to 600000');
    expect(() => addon!.listen(['x'.repeat(16)], 10)).toThrow('1 to 15 bytes');
    expect(() => addon!.listen(Array.from({ length: 65 }, () => 'eth0'), 10)).toThrow('at most 64');
  });

  const problems: string[] = [];
  if (process.getuid?.() !== 0) problems.push('not root (a network namespace and a veth pair need it)');
  else if (spawnSync('python3', ['--version']).status !== 0) problems.push('no python3 (it sends the frames)');
  const runs = requirePeerGroup('the LLDP listener test on a veth pair', [], problems);
  const ns = `irnlldp${process.pid % 100000}`;
  afterAll(() => void spawnSync('ip', ['netns', 'del', ns]));

  it.skipIf(!runs)('hears the first LLDP frame on each interface, ignores its own frames, and leaves no interface promiscuous', async () => {
    expect(existsSync(ADDON)).toBe(true);
    const ip = (...args: string[]) => {
      const res = spawnSync('ip', ['-n', ns, ...args], { encoding: 'utf8' });
      if (res.status !== 0) throw new Error(`ip ${args.join(' ')}: ${res.stderr}`);
    };
    expect(spawnSync('ip', ['netns', 'add', ns]).status).toBe(0);
    ip('link', 'add', 'name', 'vx0', 'type', 'veth', 'peer', 'name', 'vx1');
    ip('link', 'set', 'vx0', 'up');
    ip('link', 'set', 'vx1', 'up');
    // vx0 sends a frame every 100 ms for 3 s; vx1 must hear it, vx0 (the sender) must not.
    const frame = lldpFrame('Ethernet1/7').toString('hex');
    const sender = spawn('ip', ['netns', 'exec', ns, 'python3', '-c', `import socket,time\ns=socket.socket(socket.AF_PACKET,socket.SOCK_RAW)\ns.bind(('vx0',0))\nfor i in range(30):\n  s.send(bytes.fromhex('${frame}')); time.sleep(0.1)`], { stdio: 'ignore' });
    const script = `require(${JSON.stringify(ADDON)}).listen(['vx1','vx0','nope'], 1500).then((r) => process.stdout.write(JSON.stringify(r.map((x) => ({ frame: x.frame && x.frame.toString('hex'), error: x.error })))))`;
    const listener = spawnSync('ip', ['netns', 'exec', ns, process.execPath, '-e', script], { encoding: 'utf8', timeout: 10_000 });
    sender.kill();
    expect(listener.status, listener.stderr).toBe(0);
    const [vx1, vx0, nope] = JSON.parse(listener.stdout) as Array<{ frame: string | null; error: string | null }>;
    expect(parseLldpFrame(Buffer.from(vx1!.frame!, 'hex'))).toEqual(parseLldpFrame(lldpFrame('Ethernet1/7')));
    expect(vx0).toEqual({ frame: null, error: null });
    expect(nope!.error).toMatch(/^no such interface/);
    const details = spawnSync('ip', ['-n', ns, '-d', 'link', 'show', 'vx1'], { encoding: 'utf8' }).stdout;
    expect(details).toMatch(/promiscuity 0/);
  });
});
