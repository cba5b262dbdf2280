/**
 * What the LLDP an agent heard says of the switch port (Ironic's parse-lldp and
 * local-link-connection hooks): TLVs in IPA's `[type, hex]` form, built here as a switch sends them.
 */
import { describe, expect, it } from 'vitest';
import { localLinkFromLldp, parseLldp } from '../../src/nodes/lldp.js';

const hex = (s: string) => Buffer.from(s).toString('hex');

/** A switch's LLDPDU: chassis MAC, interface-name port, description, names, management IPv4 and IPv6, VLANs, MTU. */
const SWITCH = [
  [1, '04001122334455'],
  [2, `05${hex('xe-0/0/7')}`],
  [3, '0078'],
  [4, hex('to server r12')],
  [5, hex('tor-12.dc1')],
  [6, hex('Junos 23.4')],
  // management address: length 5 (family 1 + 4 bytes), IPv4, then interface numbering and OID
  [8, '05010a000001020000000100'],
  [8, `1102${'fe800000000000000000000000000001'}020000000100`],
  [127, '0080c2010064'], // port VLAN ID 100
  [127, `0080c2030064${'07'}${hex('servers')}`], // VLAN 100 "servers"
  [127, `0080c20300c8${'07'}${hex('storage')}`],
  [127, '00120f0405ee'], // max frame size 1518
  [0, ''],
];

describe('parseLldp', () => {
  it('reads chassis and port IDs, names, descriptions, management addresses, VLANs and MTU', () => {
    expect(parseLldp(SWITCH)).toEqual({
      switch_chassis_id: '00:11:22:33:44:55',
      switch_port_id: 'xe-0/0/7',
      switch_port_description: 'to server r12',
      switch_system_name: 'tor-12.dc1',
      switch_system_description: 'Junos 23.4',
      switch_mgmt_addresses: ['10.0.0.1', 'fe80::1'],
      switch_port_untagged_vlan_id: 100,
      switch_port_vlans: [{ id: 100, name: 'servers' }, { id: 200, name: 'storage' }],
      switch_port_mtu: 1518,
    });
  });

  it('decodes MAC port IDs and network-address chassis IDs', () => {
    expect(parseLldp([[1, '05010a000002'], [2, '03aabbccddeeff']])).toEqual({ switch_chassis_id: '10.0.0.2', switch_port_id: 'aa:bb:cc:dd:ee:ff' });
  });

  it('skips what the wire got wrong instead of failing, and gives null when nothing is usable', () => {
    expect(parseLldp(null)).toBeNull();
    expect(parseLldp('04aa')).toBeNull();
    expect(parseLldp([[1, 'zz'], [2, '0300'], [300, '00'], [5, hex('bad\u0001name')], ['1', '04001122334455'], [1]])).toBeNull();
    // a VLAN name whose length runs past the TLV is dropped; the good TLVs stay
    expect(parseLldp([[127, '0080c2030064ff41'], [5, hex('sw')]])).toEqual({ switch_system_name: 'sw' });
  });

  it('looks at no more than 256 TLVs of an interface', () => {
    const many = [...Array.from({ length: 256 }, () => [0, '']), [5, hex('late')]];
    expect(parseLldp(many)).toBeNull();
  });
});

describe('localLinkFromLldp', () => {
  it('gives switch_id from a MAC chassis ID, port_id from a name, switch_info from the system name', () => {
    expect(localLinkFromLldp(SWITCH)).toEqual({ switch_id: '00:11:22:33:44:55', port_id: 'xe-0/0/7', switch_info: 'tor-12.dc1' });
  });

  it('takes MAC and locally assigned port IDs, not a chassis ID that is no MAC', () => {
    expect(localLinkFromLldp([[1, '05010a000002'], [2, '03aabbccddeeff']])).toEqual({ port_id: 'aa:bb:cc:dd:ee:ff' });
    expect(localLinkFromLldp([[2, `07${hex('17')}`]])).toEqual({ port_id: '17' });
    expect(localLinkFromLldp([[2, `01${hex('alias')}`]])).toEqual({});
  });
});
