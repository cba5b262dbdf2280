import { describe, expect, it } from 'vitest';
import { conductorRingOptions } from '../../src/cluster/ring-options.js';
import { loadConfig } from '../../src/config/load.js';
import { HashRing } from '../../src/ring/index.js';

const conductor = (env: Record<string, string> = {}) => loadConfig({ env, cwd: '/nonexistent' }).config.conductor;

describe('conductorRingOptions', () => {
  it('gives balanced mode its own points per host: the exponent is a tooz-mode knob', () => {
    const options = conductorRingOptions(conductor());
    expect(options).toEqual({ mode: 'balanced' });
    const hosts = ['c1', 'c2', 'c3'];
    const ring = new HashRing(hosts, options);
    // The ring the conductors build is the library's default ring, with its balance.
    const shares = [...ring.shares().values()];
    expect(Math.max(...shares) * hosts.length).toBeLessThan(1.02);
    const plain = new HashRing(hosts);
    for (const key of ['a', 'b', '0d9c2b8e-3c51-4a37-9a0a-5d7b0f1f8c11']) expect(ring.lookup(key, { replicas: 2 })).toEqual(plain.lookup(key, { replicas: 2 }));
  });

  it('passes 2 ** hash_partition_exponent points per host in tooz mode, as Ironic does', () => {
    expect(conductorRingOptions(conductor({ IRONRING_CONDUCTOR_HASH_RING_MODE: 'tooz' }))).toEqual({ mode: 'tooz', partitions: 32 });
    expect(conductorRingOptions(conductor({ IRONRING_CONDUCTOR_HASH_RING_MODE: 'tooz', IRONRING_CONDUCTOR_HASH_PARTITION_EXPONENT: '7' }))).toEqual({ mode: 'tooz', partitions: 128 });
  });
});
