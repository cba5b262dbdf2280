import { describe, expect, it } from 'vitest';
import type { BlockDevice } from '../../../src/agent/disk/block-devices.js';
import { DeviceNotFound, InvalidRootDeviceHints } from '../../../src/agent/disk/errors.js';
import { chooseRootDevice, findDevicesByHints, normaliseValue, parseHints } from '../../../src/agent/disk/root-device-hints.js';

const GIB = 2 ** 30;

function device(fields: Partial<BlockDevice> & { name: string; size: number }): BlockDevice {
  return {
    model: null,
    vendor: null,
    serial: null,
    wwn: null,
    wwn_with_extension: null,
    wwn_vendor_extension: null,
    rotational: false,
    hctl: null,
    by_path: null,
    logical_sectors: 512,
    physical_sectors: 512,
    removable: false,
    ...fields,
  };
}

/** The device every operator case is matched against. */
const nvme = device({
  name: '/dev/nvme0n1',
  size: 500 * GIB,
  model: 'Samsung SSD 970 EVO Plus',
  vendor: 'Samsung',
  serial: 'S4EVNX0N123456',
  wwn: '0x5000c500a1b2c3d4',
  wwn_with_extension: '0x5000c500a1b2c3d4beef',
  wwn_vendor_extension: '0xbeef',
  rotational: false,
  hctl: '2:0:0:0',
  by_path: '/dev/disk/by-path/pci-0000:01:00.0-nvme-1',
});

const matches = (hints: Record<string, unknown>, d: BlockDevice = nvme) => findDevicesByHints([d], parseHints(hints)).length === 1;

describe('root device hints: every operator, true and false', () => {
  // [hint, expression, matches nvme0n1?]
  const cases: Array<[string, unknown, boolean]> = [
    // size (GiB), numbers
    ['size', 500, true],
    ['size', 499, false],
    ['size', '500', true],
    ['size', '== 500', true],
    ['size', '== 499', false],
    ['size', '!= 499', true],
    ['size', '!= 500', false],
    ['size', '>= 500', true],
    ['size', '>= 501', false],
    ['size', '> 499', true],
    ['size', '> 500', false],
    ['size', '<= 500', true],
    ['size', '<= 499', false],
    ['size', '< 501', true],
    ['size', '< 500', false],
    ['size', '= 400', true], // Ironic's legacy '=' is '>='
    ['size', '= 501', false],
    ['size', '>=500', true], // no space needed after the operator
    ['size', '<or> 100 <or> 500', true],
    ['size', '<or> 100 <or> 200', false],
    ['size', '<range-in> [ 500 600 ]', true],
    ['size', '<range-in> ( 500 600 ]', false],
    ['size', '<range-in> [ 400 500 )', false],
    ['size', '<range-in> (400 501)', true],
    // strings: compared lower-cased and URL-quoted on both sides
    ['serial', 'S4EVNX0N123456', true],
    ['serial', 's4evnx0n123456', true],
    ['serial', 'S4EVNX0N12345', false],
    ['serial', 's== S4EVNX0N123456', true],
    ['serial', 's== S4EVNX0N12345', false],
    ['serial', 's!= other', true],
    ['serial', 's!= s4evnx0n123456', false],
    ['serial', 's>= s4', true],
    ['serial', 's>= s5', false],
    ['serial', 's> s4', true],
    ['serial', 's> s5', false],
    ['serial', 's<= s5', true],
    ['serial', 's<= s4', false],
    ['serial', 's< s5', true],
    ['serial', 's< s4', false],
    ['serial', '<in> EVNX', true],
    ['serial', '<in> XYZ', false],
    ['serial', '<or> abc <or> S4EVNX0N123456', true],
    ['serial', '<or> abc <or> def', false],
    ['model', 'samsung ssd 970 evo plus', true],
    ['model', '  SAMSUNG SSD 970 EVO PLUS  ', true],
    ['model', 'samsung  ssd 970 evo plus', false], // inner whitespace is significant once quoted
    ['model', '<in> SSD 970', true],
    ['model', '<or> samsung ssd 970 evo plus <or> micron', true],
    ['vendor', 'samsung', true],
    ['vendor', 'micron', false],
    ['wwn', '0x5000C500A1B2C3D4', true],
    ['wwn', '0x5000c500a1b2c3d5', false],
    ['wwn_with_extension', '0x5000c500a1b2c3d4beef', true],
    ['wwn_with_extension', '0x5000c500a1b2c3d4', false],
    ['wwn_vendor_extension', '0xbeef', true],
    ['wwn_vendor_extension', '0xdead', false],
    ['hctl', '2:0:0:0', true],
    ['hctl', '0:0:0:0', false],
    ['by_path', '/dev/disk/by-path/pci-0000:01:00.0-nvme-1', true],
    ['by_path', '<in> pci-0000:01:00.0', true],
    ['by_path', '/dev/disk/by-path/pci-0000:02:00.0-nvme-1', false],
    // name, with or without /dev/
    ['name', '/dev/nvme0n1', true],
    ['name', 'nvme0n1', true],
    ['name', 'sda', false],
    ['name', '<or> sda <or> nvme0n1', true],
    ['name', 's!= sda', true],
    // rotational: oslo's strict booleans
    ['rotational', false, true],
    ['rotational', true, false],
    ['rotational', 'false', true],
    ['rotational', 'no', true],
    ['rotational', '0', true],
    ['rotational', 0, true],
    ['rotational', 'True', false],
    ['rotational', 'on', false],
  ];
  it.each(cases)('%s %j → %s', (hint, expression, expected) => {
    expect(matches({ [hint]: expression })).toBe(expected);
  });

  it('matches only when every hint matches', () => {
    expect(matches({ size: '>= 100', rotational: false, model: '<in> evo' })).toBe(true);
    expect(matches({ size: '>= 100', rotational: true, model: '<in> evo' })).toBe(false);
  });

  it('never matches a hint on an attribute the device does not report, whatever the operator', () => {
    const bare = device({ name: '/dev/vda', size: 20 * GIB });
    expect(matches({ serial: 's!= anything' }, bare)).toBe(false);
    expect(matches({ wwn: '<in> 0x' }, bare)).toBe(false);
    expect(matches({ model: 's>= a' }, device({ name: '/dev/vdb', size: GIB, model: '   ' }))).toBe(false);
  });

  it('compares sizes exactly in GiB: a 100.5 GiB disk is not size 100', () => {
    const odd = device({ name: '/dev/sdb', size: 100.5 * GIB });
    expect(matches({ size: 100 }, odd)).toBe(false);
    expect(matches({ size: '>= 100' }, odd)).toBe(true);
  });

  it('normalises as Ironic does: lower-case, trimmed, URL-quoted like Python quote()', () => {
    expect(normaliseValue('  Samsung SSD (x)*! ')).toBe('samsung%20ssd%20%28x%29%2A%21');
    expect(normaliseValue('/dev/disk/by-path/pci-0000:00:1f.2-ata-1')).toBe('/dev/disk/by-path/pci-0000%3A00%3A1f.2-ata-1');
    expect(parseHints({ vendor: '<or> Samsung Inc <or> WDC' })).toEqual([
      { hint: 'vendor', type: 'string', op: '<or>', values: ['samsung%20inc', 'wdc'] },
    ]);
  });
});

describe('root device hints: refusals name the hint', () => {
  const refusals: Array<[Record<string, unknown> | unknown, string]> = [
    [{ colour: 'red' }, 'root device hint "colour": is not a root device hint; valid hints: size, model, wwn, serial, vendor'],
    [{ size: 'abc' }, 'root device hint "size": is not an integer value (got "abc")'],
    [{ size: 0 }, 'root device hint "size": should be a positive integer (got 0)'],
    [{ size: '>= 0' }, 'root device hint "size": should be a positive integer'],
    [{ size: 1.5 }, 'root device hint "size": is not an integer value (got 1.5)'],
    [{ size: -1 }, 'root device hint "size": is not an integer value (got -1)'],
    [{ size: 's== 10' }, 'root device hint "size": operator "s==" does not apply to numbers'],
    [{ size: '<in> 10' }, 'root device hint "size": operator "<in>" does not apply to numbers'],
    [{ size: '<range-in> [ 10 ]' }, 'root device hint "size": "<range-in>" takes two bounds in brackets'],
    [{ size: '<range-in> [ 20 10 ]' }, 'root device hint "size": "<range-in>" lower bound 20 is above the upper bound 10'],
    [{ size: '>=' }, 'root device hint "size": operator ">=" needs a value'],
    [{ serial: 12345 }, 'root device hint "serial": is not a string value (got 12345)'],
    [{ serial: '   ' }, 'root device hint "serial": expression is empty'],
    [{ serial: '>= 5' }, 'root device hint "serial": operator ">=" does not apply to strings'],
    [{ model: '<foo> bar' }, 'root device hint "model": unknown operator "<foo>"'],
    [{ model: '=> bar' }, 'root device hint "model": unknown operator "=>"'],
    [{ model: '= bar' }, 'root device hint "model": operator "=" does not apply to strings'],
    [{ model: '<all-in> a b' }, 'root device hint "model": operator "<all-in>" does not apply to strings'],
    [{ rotational: 'maybe' }, 'root device hint "rotational": is not a Boolean value (got "maybe")'],
    [['size'], 'root device hints: expected an object'],
    ['>= 10', 'root device hints: expected an object'],
  ];
  it.each(refusals)('%j', (hints, message) => {
    expect(() => parseHints(hints)).toThrow(InvalidRootDeviceHints);
    expect(() => parseHints(hints)).toThrow(message);
  });
});

describe('chooseRootDevice with hints', () => {
  const sda = device({ name: '/dev/sda', size: 100 * GIB, rotational: true, serial: 'HDD1' });
  const sdb = device({ name: '/dev/sdb', size: 200 * GIB, rotational: false, serial: 'SSD1' });
  const sdc = device({ name: '/dev/sdc', size: 300 * GIB, rotational: false, serial: 'SSD2' });
  const tiny = device({ name: '/dev/sdd', size: GIB, serial: 'TINY' });

  it('returns the first matching device in listing order, not the smallest', () => {
    expect(chooseRootDevice([sda, sdc, sdb], { rotational: false }).name).toBe('/dev/sdc');
    expect(chooseRootDevice([sda, sdb, sdc], { rotational: false }).name).toBe('/dev/sdb');
  });

  it('may choose a disk under 4 GiB when the hints name it (the size floor is only the default rule)', () => {
    expect(chooseRootDevice([sda, tiny], { serial: 'TINY' }).name).toBe('/dev/sdd');
  });

  it('fails with the hints and every device seen when nothing matches', () => {
    expect(() => chooseRootDevice([sda, sdb], { serial: 'nope' })).toThrow(DeviceNotFound);
    expect(() => chooseRootDevice([sda, sdb], { serial: 'nope' })).toThrow(
      'no disk matches the root device hints {"serial":"nope"}; seen: /dev/sda (100 GiB, serial "HDD1", rotational true); /dev/sdb (200 GiB, serial "SSD1", rotational false)',
    );
  });

  it('refuses malformed hints before looking at devices', () => {
    expect(() => chooseRootDevice([sda], { size: 'big' })).toThrow(InvalidRootDeviceHints);
  });
});
