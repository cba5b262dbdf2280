/**
 * What an inventory means for a node (`processInventory`) and for its ports (`planPorts`), as
 * Ironic's inspection hooks decide: `[inspector] add_ports`, `keep_ports`, `update_pxe_enabled`,
 * the root disk and `local_gb`, the boot mode capability.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_INSPECTOR_SETTINGS, InspectionFailed, planPorts, processInventory, pxeMac, withCapability } from '../../src/conductor/inspection.js';
import type { InspectorSettings } from '../../src/conductor/inspection.js';

const GIB = 2 ** 30;
const A = '52:54:00:00:00:0a';
const B = '52:54:00:00:00:0b';
const C = '52:54:00:00:00:0c';

const disk = (name: string, size: number, serial: string) => ({ name, size, serial, model: null, vendor: null, wwn: null, rotational: false, hctl: null, by_path: null });

function inventory(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    cpu: { count: 8, architecture: 'aarch64' },
    memory: { total: 16 * GIB - 300 * 2 ** 20, physical_mb: 16384 },
    disks: [disk('/dev/sda', 480 * GIB, 's-a'), disk('/dev/sdb', 2 * GIB, 's-b'), disk('/dev/nvme0n1', 960 * GIB, 's-n')],
    interfaces: [
      { name: 'eno1', mac_address: A.toUpperCase(), ipv4_address: '10.0.0.5', ipv6_address: null },
      { name: 'eno2', mac_address: B, ipv4_address: null, ipv6_address: 'fe80::1%eno2' },
      { name: 'eno3', mac_address: C, ipv4_address: null, ipv6_address: null },
      { name: 'lo', mac_address: '00:00:00:00:00:00', ipv4_address: '127.0.0.1' },
      { name: 'bad', mac_address: 'nope' },
    ],
    boot: { current_boot_mode: 'bios', pxe_interface: `01-${A.replaceAll(':', '-')}` },
    ...overrides,
  };
}

const settings = (s: Partial<InspectorSettings> = {}): InspectorSettings => ({ ...DEFAULT_INSPECTOR_SETTINGS, ...s });

describe('processInventory', () => {
  it('sets cpus, cpu_arch, memory_mb, local_gb of the smallest disk of 4 GiB or more, and the boot mode capability', () => {
    const found = processInventory({ properties: { capabilities: 'boot_mode:uefi,x:y', vendor: 'kept' } }, inventory(), settings());
    expect(found.properties).toEqual({ vendor: 'kept', capabilities: 'x:y,boot_mode:bios', cpus: 8, cpu_arch: 'aarch64', memory_mb: 16384, local_gb: 479 });
    expect(found.rootDisk?.name).toBe('/dev/sda');
    expect(Object.keys(found.allInterfaces)).toEqual(['eno1', 'eno2', 'eno3']);
    expect(found.allInterfaces.eno1).toMatchObject({ mac_address: A, pxe_enabled: true });
    expect(found.allInterfaces.eno2?.ipv6_address).toBe('fe80::1');
    // add_ports = pxe: the interface it booted from only.
    expect(Object.keys(found.validInterfaces)).toEqual(['eno1']);
  });

  it('uses the memory total without physical_mb, and no spacing when disk_partitioning_spacing is off', () => {
    const found = processInventory({ properties: {} }, inventory({ memory: { total: 4 * GIB } }), settings({ diskPartitioningSpacing: false }));
    expect(found.properties).toMatchObject({ memory_mb: 4096, local_gb: 480 });
  });

  it('follows root device hints, skips skip_block_devices, and fails when no disk matches', () => {
    expect(processInventory({ properties: { root_device: { serial: 's-n' } } }, inventory(), settings()).localGb).toBe(959);
    expect(processInventory({ properties: { skip_block_devices: [{ name: '/dev/sda' }] } }, inventory(), settings()).rootDisk?.name).toBe('/dev/nvme0n1');
    expect(() => processInventory({ properties: { root_device: { serial: 'zzz' } } }, inventory(), settings())).toThrow(InspectionFailed);
    expect(() => processInventory({ properties: { root_device: { serial: 's-a' }, skip_block_devices: [{ serial: 's-a' }] } }, inventory(), settings())).toThrow(/no disk satisfies/);
  });

  it('gives local_gb 0 for a node without a disk of 4 GiB', () => {
    const found = processInventory({ properties: {} }, inventory({ disks: [disk('/dev/sdb', 2 * GIB, 's-b')] }), settings());
    expect(found).toMatchObject({ rootDisk: null, localGb: 0, properties: { local_gb: 0 } });
  });

  it('picks interfaces per add_ports, falling back to those with an address when the boot NIC is unknown', () => {
    const names = (s: Partial<InspectorSettings>, inv = inventory()) => Object.keys(processInventory({ properties: {} }, inv, settings(s)).validInterfaces);
    expect(names({ addPorts: 'all' })).toEqual(['eno1', 'eno2', 'eno3']);
    expect(names({ addPorts: 'active' })).toEqual(['eno1', 'eno2']);
    expect(names({ addPorts: 'pxe' }, inventory({ boot: { current_boot_mode: 'uefi' } }))).toEqual(['eno1', 'eno2']);
    expect(names({ addPorts: 'disabled' })).toEqual(['eno1', 'eno2', 'eno3']);
  });

  it('fails an inventory with no usable interface, or none add_ports accepts', () => {
    expect(() => processInventory({ properties: {} }, inventory({ interfaces: [{ name: 'x', mac_address: 'zz' }] }), settings())).toThrow(/no network interface with a valid MAC/);
    expect(() => processInventory({ properties: {} }, inventory({ interfaces: [{ name: 'eno3', mac_address: C }] }), settings({ addPorts: 'active' }))).toThrow(/add_ports = active/);
  });

  it('never lets an interface name reach Object.prototype', () => {
    const found = processInventory({ properties: {} }, inventory({ interfaces: [{ name: '__proto__', mac_address: A, ipv4_address: '10.0.0.1' }] }), settings({ addPorts: 'all' }));
    expect(Object.keys(found.allInterfaces)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).mac_address).toBeUndefined();
  });
});

describe('planPorts', () => {
  const found = (s: Partial<InspectorSettings> = {}) => processInventory({ properties: {} }, inventory(), settings(s));
  const existing = [
    { uuid: 'p-a', address: A, pxe_enabled: false },
    { uuid: 'p-x', address: '52:54:00:00:00:ff', pxe_enabled: true },
  ];

  it('adds what add_ports picks, keeps every port with keep_ports = all, and corrects pxe_enabled', () => {
    expect(planPorts(existing, found({ addPorts: 'all' }), settings({ addPorts: 'all' }))).toEqual({
      create: [{ address: B, pxeEnabled: false }, { address: C, pxeEnabled: false }],
      remove: [],
      setPxe: [{ uuid: 'p-a', pxeEnabled: true }, { uuid: 'p-x', pxeEnabled: false }],
      setLink: [],
    });
  });

  it('removes ports whose MAC is not present (present) or not added (added)', () => {
    expect(planPorts(existing, found(), settings({ keepPorts: 'present' })).remove).toEqual([{ uuid: 'p-x', address: '52:54:00:00:00:ff' }]);
    const added = planPorts([...existing, { uuid: 'p-b', address: B, pxe_enabled: false }], found(), settings({ keepPorts: 'added' }));
    expect(added.remove.map((p) => p.uuid)).toEqual(['p-x', 'p-b']);
  });

  it('adds nothing with add_ports = disabled, and leaves pxe_enabled with update_pxe_enabled off', () => {
    expect(planPorts(existing, found({ addPorts: 'disabled' }), settings({ addPorts: 'disabled', updatePxeEnabled: false }))).toEqual({ create: [], remove: [], setPxe: [], setLink: [] });
  });

  it('fills local_link_connection from LLDP on new and kept ports, never over a key already set, and not when turned off', () => {
    // eno1 (A) and eno2 (B) heard a switch: chassis MAC, port name, system name.
    const lldp = (port: string) => [[1, '04aabbccddeeff'], [2, `05${Buffer.from(port).toString('hex')}`], [5, Buffer.from('leaf-1').toString('hex')], [0, '']];
    const inv = inventory();
    (inv.interfaces as Array<Record<string, unknown>>)[0]!.lldp = lldp('Ethernet1/1');
    (inv.interfaces as Array<Record<string, unknown>>)[1]!.lldp = lldp('Ethernet1/2');
    const findings = processInventory({ properties: {} }, inv, settings({ addPorts: 'all' }));
    expect(findings.parsedLldp.eno1).toEqual({ switch_chassis_id: 'aa:bb:cc:dd:ee:ff', switch_port_id: 'Ethernet1/1', switch_system_name: 'leaf-1' });
    const kept = [{ uuid: 'p-a', address: A, pxe_enabled: true, local_link_connection: { port_id: 'operator-set' } }];
    const plan = planPorts(kept, findings, settings({ addPorts: 'all' }));
    expect(plan.create[0]).toEqual({ address: B, pxeEnabled: false, localLinkConnection: { switch_id: 'aa:bb:cc:dd:ee:ff', port_id: 'Ethernet1/2', switch_info: 'leaf-1' } });
    expect(plan.create[1]).toEqual({ address: C, pxeEnabled: false });
    expect(plan.setLink).toEqual([{ uuid: 'p-a', address: A, localLinkConnection: { port_id: 'operator-set', switch_id: 'aa:bb:cc:dd:ee:ff', switch_info: 'leaf-1' } }]);
    const off = planPorts(kept, findings, settings({ addPorts: 'all', updateLocalLinkConnection: false }));
    expect(off.setLink).toEqual([]);
    expect(off.create[0]).toEqual({ address: B, pxeEnabled: false });
  });
});

describe('helpers', () => {
  it('reads the boot MAC in pxelinux and plain forms', () => {
    expect(pxeMac({ boot: { pxe_interface: '01-52-54-00-AA-BB-CC' } })).toBe('52:54:00:aa:bb:cc');
    expect(pxeMac({ boot: { pxe_interface: '52:54:00:AA:BB:CC' } })).toBe('52:54:00:aa:bb:cc');
    expect(pxeMac({ boot: { pxe_interface: 'eth0' } })).toBeNull();
    expect(pxeMac({})).toBeNull();
  });

  it('sets one capability, keeping the others', () => {
    expect(withCapability(undefined, 'boot_mode', 'uefi')).toBe('boot_mode:uefi');
    expect(withCapability('a:1,boot_mode:bios', 'boot_mode', 'uefi')).toBe('a:1,boot_mode:uefi');
  });
});
