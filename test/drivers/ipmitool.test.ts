import { describe, expect, it } from 'vitest';
import { IpmiFailure, PowerActionFailed } from '../../src/drivers/errors.js';
import { parseIpmiDriverInfo } from '../../src/drivers/ipmi/ipmi-driver-info.js';
import { Ipmitool, ipmitoolArgs, ipmitoolEnv } from '../../src/drivers/ipmi/ipmitool.js';
import type { Exec, ExecFailure } from '../../src/drivers/ipmi/ipmitool.js';
import { bootdevCommand } from '../../src/drivers/ipmi/ipmitool-management.js';
import { errorSummary, parseBootParam, parsePowerStatus } from '../../src/drivers/ipmi/ipmitool-output.js';
import { IpmitoolPower } from '../../src/drivers/ipmi/ipmitool-power.js';
import { createDriverRegistry } from '../../src/drivers/builtin.js';
import { makeNode, makeTask } from './helpers.js';

const INFO = { ipmi_address: '10.0.0.7', ipmi_username: 'admin', ipmi_password: 's3cret' };

/** Output captured from ipmitool 1.8.19 against the pyghmi BMC. */
const BOOTPARAM_PXE_PERSISTENT = `Boot parameter version: 1
Boot parameter 5 is valid/unlocked
Boot parameter data: c004000000
 Boot Flags :
   - Boot Flag Valid
   - Options apply to all future boots
   - BIOS PC Compatible (legacy) boot
   - Boot Device Selector : Force PXE
`;
const BOOTPARAM_DISK_ONCE = BOOTPARAM_PXE_PERSISTENT.replace('c004000000', '8008000000')
  .replace('all future boots', 'only next boot')
  .replace('Force PXE', 'Force Boot from default Hard-Drive');

function failure(stderr: string, extra: Partial<ExecFailure> = {}): ExecFailure {
  return { stdout: '', stderr, code: 1, notFound: false, timedOut: false, ...extra };
}

/** A fake clock whose sleep advances time instantly, so waits are exercised without sleeping. */
function fakeClock() {
  const clock = { t: 0, sleeps: [] as number[] };
  return {
    clock,
    now: () => clock.t,
    sleep: async (ms: number) => {
      clock.sleeps.push(ms);
      clock.t += ms;
    },
  };
}

describe('ipmi driver_info', () => {
  it('defaults to lanplus on port 623 as ADMINISTRATOR', () => {
    expect(parseIpmiDriverInfo(INFO)).toEqual({ address: '10.0.0.7', port: 623, username: 'admin', password: 's3cret', interface: 'lanplus', privLevel: 'ADMINISTRATOR' });
  });

  it('accepts a port given as a string and protocol 1.5 as lan', () => {
    expect(parseIpmiDriverInfo({ ...INFO, ipmi_port: '6230', ipmi_protocol_version: '1.5' })).toMatchObject({ port: 6230, interface: 'lan' });
  });

  it('names the missing or bad field', () => {
    expect(() => parseIpmiDriverInfo({})).toThrow('driver_info.ipmi_address is required by the ipmi hardware type');
    expect(() => parseIpmiDriverInfo({ ipmi_address: '-E' })).toThrow('driver_info.ipmi_address is not a host name or IP address');
    expect(() => parseIpmiDriverInfo({ ipmi_address: 'bmc', ipmi_port: 70000 })).toThrow('driver_info.ipmi_port must be an integer from 1 to 65535');
    expect(() => parseIpmiDriverInfo({ ipmi_address: 'bmc', ipmi_protocol_version: '3' })).toThrow('driver_info.ipmi_protocol_version must be one of 2.0, 1.5');
    let error: unknown;
    try {
      parseIpmiDriverInfo({ ipmi_address: 'bmc', ipmi_priv_level: 'ROOT' });
    } catch (err) {
      error = err;
    }
    expect(error).toMatchObject({ name: 'InvalidParameterValue', httpStatus: 400, field: 'driver_info.ipmi_priv_level' });
  });
});

describe('ipmitool arguments', () => {
  it('builds argv without the password, which travels in IPMI_PASSWORD', () => {
    const info = parseIpmiDriverInfo({ ...INFO, ipmi_port: 6230 });
    const args = ipmitoolArgs(info, ['chassis', 'power', 'status']);
    expect(args).toEqual(['-I', 'lanplus', '-H', '10.0.0.7', '-p', '6230', '-U', 'admin', '-E', '-L', 'ADMINISTRATOR', '-R', '3', '-N', '1', 'chassis', 'power', 'status']);
    expect(args.join(' ')).not.toContain('s3cret');
    expect(ipmitoolEnv(info, { PATH: '/bin', HOME: '/root' })).toEqual({ PATH: '/bin', LC_ALL: 'C', IPMI_PASSWORD: 's3cret' });
  });

  it('omits user and -E when there are no credentials, and passes a cipher suite', () => {
    const info = parseIpmiDriverInfo({ ipmi_address: 'bmc-1.lab', ipmi_cipher_suite: 3 });
    const args = ipmitoolArgs(info, ['chassis', 'power', 'on'], { sessionRetries: 1, sessionTimeoutS: 2 });
    expect(args).toEqual(['-I', 'lanplus', '-H', 'bmc-1.lab', '-p', '623', '-L', 'ADMINISTRATOR', '-C', '3', '-R', '1', '-N', '2', 'chassis', 'power', 'on']);
  });

  it('asks for persistence and EFI boot through bootdev options', () => {
    expect(bootdevCommand('pxe', false, false)).toEqual(['chassis', 'bootdev', 'pxe']);
    expect(bootdevCommand('pxe', true, false)).toEqual(['chassis', 'bootdev', 'pxe', 'options=persistent']);
    expect(bootdevCommand('disk', true, true)).toEqual(['chassis', 'bootdev', 'disk', 'options=persistent,efiboot']);
  });
});

describe('ipmitool output', () => {
  it('reads the power state whatever the case and spacing', () => {
    expect(parsePowerStatus('Chassis Power is on\n')).toBe('power on');
    expect(parsePowerStatus('chassis power is  OFF')).toBe('power off');
    expect(parsePowerStatus('Chassis Power Control: Up/On')).toBeNull();
  });

  it('reads the boot device and persistence from the boot flags', () => {
    expect(parseBootParam(BOOTPARAM_PXE_PERSISTENT)).toEqual({ boot_device: 'pxe', persistent: true });
    expect(parseBootParam(BOOTPARAM_DISK_ONCE)).toEqual({ boot_device: 'disk', persistent: false });
    expect(parseBootParam('Boot parameter data: 8014000000')).toEqual({ boot_device: 'cdrom', persistent: false });
    expect(parseBootParam('Boot parameter data: 8018000000')).toEqual({ boot_device: 'bios', persistent: false });
    expect(parseBootParam('Boot parameter data: 8000000000')).toEqual({ boot_device: null, persistent: false });
    // Flags not valid: no override, whatever the selector says.
    expect(parseBootParam('Boot parameter data: 0004000000')).toEqual({ boot_device: null, persistent: false });
  });

  it('falls back to the text when there is no data line', () => {
    const text = BOOTPARAM_PXE_PERSISTENT.split('\n').filter((l) => !l.includes('data:')).join('\n');
    expect(parseBootParam(text)).toEqual({ boot_device: 'pxe', persistent: true });
    expect(parseBootParam('Error: Unable to establish IPMI v2 / RMCP+ session')).toBeNull();
  });

  it('keeps the error lines of a failed run, once each', () => {
    const stderr = '> Error: no response from RAKP 1 message\n> Error: no response from RAKP 1 message\nSet Session Privilege Level to ADMINISTRATOR failed\nError: Unable to establish IPMI v2 / RMCP+ session\n';
    expect(errorSummary(stderr)).toBe('Error: no response from RAKP 1 message; Set Session Privilege Level to ADMINISTRATOR failed; Error: Unable to establish IPMI v2 / RMCP+ session');
  });
});

describe('ipmitool runner', () => {
  const info = parseIpmiDriverInfo(INFO);

  it('retries a lossy BMC with doubling back-off and returns the answer', async () => {
    const { clock, now, sleep } = fakeClock();
    let calls = 0;
    const exec: Exec = async () => {
      calls += 1;
      if (calls < 3) throw failure('Error: Unable to establish IPMI v2 / RMCP+ session');
      return { stdout: 'Chassis Power is on\n', stderr: '' };
    };
    const runner = new Ipmitool({ exec, now, sleep, retryDelayMs: 100 });
    expect(await runner.run(info, ['chassis', 'power', 'status'])).toContain('is on');
    expect(clock.sleeps).toEqual([100, 200]);
  });

  it('gives up after the last attempt with the BMC message', async () => {
    const { now, sleep } = fakeClock();
    const exec: Exec = async () => {
      throw failure('Error: Unable to establish IPMI v2 / RMCP+ session');
    };
    const runner = new Ipmitool({ exec, now, sleep, attempts: 2 });
    const error = await runner.run(info, ['chassis', 'power', 'on']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IpmiFailure);
    expect(error).toMatchObject({ attempts: 2, bmc: '10.0.0.7:623', bmcMessage: 'Error: Unable to establish IPMI v2 / RMCP+ session' });
  });

  it('does not retry a refusal or a missing binary', async () => {
    const { now, sleep } = fakeClock();
    let calls = 0;
    const refusing = new Ipmitool({
      now,
      sleep,
      exec: async () => {
        calls += 1;
        throw failure('Set Chassis Boot Parameter 5 failed: Invalid data field in request');
      },
    });
    await expect(refusing.run(info, ['chassis', 'bootdev', 'pxe'])).rejects.toMatchObject({ attempts: 1 });
    expect(calls).toBe(1);
    const missing = new Ipmitool({ binary: '/nonexistent/ipmitool', now, sleep });
    await expect(missing.run(info, ['chassis', 'power', 'status'])).rejects.toThrow('/nonexistent/ipmitool is not installed or not on PATH');
  });

  it('runs one command at a time per BMC', async () => {
    let running = 0;
    let most = 0;
    const exec: Exec = async () => {
      running += 1;
      most = Math.max(most, running);
      await new Promise((resolve) => setImmediate(resolve));
      running -= 1;
      return { stdout: 'Chassis Power is off', stderr: '' };
    };
    const runner = new Ipmitool({ exec });
    await Promise.all([1, 2, 3, 4].map(() => runner.run(info, ['chassis', 'power', 'status'])));
    expect(most).toBe(1);
  });
});

describe('ipmitool power', () => {
  /** A BMC that reaches the requested state only after `lag` status reads. */
  function laggingBmc(lag: number) {
    const log: string[] = [];
    let state = 'off';
    let target = 'off';
    let reads = 0;
    const exec: Exec = async (_file, args) => {
      const command = args.slice(args.indexOf('chassis')).join(' ');
      log.push(command);
      if (command === 'chassis power status') {
        reads += 1;
        if (reads > lag) state = target;
        return { stdout: `Chassis Power is ${state}\n`, stderr: '' };
      }
      target = command.endsWith(' on') ? 'on' : 'off';
      reads = 0;
      return { stdout: `Chassis Power Control: ${target === 'on' ? 'Up/On' : 'Down/Off'}\n`, stderr: '' };
    };
    return { exec, log };
  }

  function registryWith(exec: Exec) {
    const clock = fakeClock();
    const registry = createDriverRegistry({ ipmitool: { exec, now: clock.now, sleep: clock.sleep }, powerPoll: { initialIntervalMs: 100, maxIntervalMs: 400 } });
    return { registry, clock: clock.clock };
  }

  it('powers on and waits, with back-off, until the BMC reports on', async () => {
    const { exec, log } = laggingBmc(3);
    const { registry, clock } = registryWith(exec);
    const task = makeTask(registry, makeNode({ driver: 'ipmi', driver_info: INFO }));
    await task.driver.power.setPowerState(task, 'power on');
    expect(log).toEqual(['chassis power on', ...Array<string>(4).fill('chassis power status')]);
    expect(clock.sleeps).toEqual([100, 200, 400]);
    expect(await task.driver.power.getPowerState(task)).toBe('power on');
  });

  it('fails with PowerActionFailed when the state is not reached in time', async () => {
    const { exec } = laggingBmc(1_000);
    const { registry } = registryWith(exec);
    const task = makeTask(registry, makeNode({ driver: 'ipmi', driver_info: INFO }));
    const error = await task.driver.power.setPowerState(task, 'power on', 2).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PowerActionFailed);
    expect((error as Error).message).toMatch(/power on failed for node .*: not reached within 2 s: the BMC still reports power off/);
  });

  it('reboots as off then on, each confirmed', async () => {
    const { exec, log } = laggingBmc(0);
    const { registry } = registryWith(exec);
    const task = makeTask(registry, makeNode({ driver: 'ipmi', driver_info: INFO }));
    await task.driver.power.reboot(task);
    expect(log).toEqual(['chassis power off', 'chassis power status', 'chassis power on', 'chassis power status']);
  });

  it('reports an unreachable BMC as PowerActionFailed carrying its message', async () => {
    const clock = fakeClock();
    const exec: Exec = async () => {
      throw failure('Error: Unable to establish IPMI v2 / RMCP+ session');
    };
    const power = new IpmitoolPower(new Ipmitool({ exec, now: clock.now, sleep: clock.sleep }));
    const task = makeTask(createDriverRegistry(), makeNode({ driver: 'ipmi', driver_info: INFO }));
    await expect(power.getPowerState(task)).rejects.toMatchObject({ name: 'PowerActionFailed', httpStatus: 500, bmcMessage: 'Error: Unable to establish IPMI v2 / RMCP+ session' });
  });

  it('validates driver_info without calling the BMC', async () => {
    const task = makeTask(createDriverRegistry(), makeNode({ driver: 'ipmi', driver_info: { ipmi_username: 'admin' } }));
    await expect(task.driver.power.validate(task)).rejects.toMatchObject({ field: 'driver_info.ipmi_address', httpStatus: 400 });
    await expect(task.driver.management.validate(task)).rejects.toMatchObject({ field: 'driver_info.ipmi_address' });
  });
});
