/**
 * INTERFACE_FIELDS (src/drivers/fields.ts), which docs/driver-fields.md is generated from, against
 * what the interfaces really do: every key they read is listed, every listed key is read, every
 * required one is enforced with an error naming it — and the generated page is current.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderDriverFieldsDoc, DOC_PATH } from '../../scripts/gen-driver-fields-doc.js';
import { createDriverRegistry } from '../../src/drivers/builtin.js';
import { InvalidParameterValue, UnsupportedDriverExtension } from '../../src/drivers/errors.js';
import { FAKE_HARDWARE } from '../../src/drivers/fake/fake-hardware.js';
import { INTERFACE_FIELDS } from '../../src/drivers/fields.js';
import type { DriverField } from '../../src/drivers/fields.js';
import { IMPLEMENTED_INTERFACE_TYPES } from '../../src/drivers/hardware-type.js';
import type { ImplementedInterfaceType } from '../../src/drivers/hardware-type.js';
import { IPMI_HARDWARE } from '../../src/drivers/ipmi/ipmi-hardware.js';
import type { DriverNode } from '../../src/drivers/task.js';
import { DEPLOY_IMAGES, INSTANCE_IMAGES, makeNode, makeTask, RecordingBootEnvironment } from './helpers.js';

type Bag = 'driver_info' | 'instance_info' | 'properties';

/** A node with a valid value for every key any interface reads. */
function fullBags(): Record<Bag, Record<string, unknown>> {
  return {
    driver_info: {
      ...DEPLOY_IMAGES,
      kernel_append_params: 'console=ttyS0',
      ipmi_address: '10.0.0.5',
      ipmi_port: 623,
      ipmi_username: 'admin',
      ipmi_password: 'secret',
      ipmi_protocol_version: '2.0',
      ipmi_priv_level: 'ADMINISTRATOR',
      ipmi_cipher_suite: 3,
    },
    instance_info: {
      ...INSTANCE_IMAGES,
      kernel_append_params: 'quiet',
      deploy_boot_mode: 'uefi',
      image_source: 'http://images.example/disk.raw',
      image_os_hash_algo: 'sha256',
      image_os_hash_value: 'ab'.repeat(32),
      image_disk_format: 'raw',
    },
    properties: { capabilities: 'boot_mode:uefi' },
  };
}

/** Runs what an implementation does with a node's fields short of touching hardware. */
async function exercise(type: ImplementedInterfaceType, name: string, bags: Record<Bag, Record<string, unknown>>, read?: Set<string>): Promise<void> {
  const watch = (bag: Bag): Record<string, unknown> =>
    read === undefined
      ? bags[bag]
      : new Proxy(bags[bag], {
          get(target, key, receiver) {
            if (typeof key === 'string') read.add(`${bag}.${key}`);
            return Reflect.get(target, key, receiver) as unknown;
          },
        });
  // The direct deploy refuses an instance kernel and ramdisk together (Ironic's mark of a partition
  // image), which the ramdisk deploy needs: it is exercised without the ramdisk.
  if (type === 'deploy' && name === 'direct') delete bags.instance_info.ramdisk;
  const driver = name === 'ipmitool' ? 'ipmi' : 'fake-hardware';
  // The other interfaces stay fake (they read nothing), so only `name`'s reads are recorded.
  const node = makeNode({ driver, [`${type}_interface`]: name, boot_interface: type === 'boot' ? name : 'fake', driver_info: watch('driver_info'), instance_info: watch('instance_info'), properties: watch('properties') } as Partial<DriverNode>);
  if (driver === 'ipmi') Object.assign(node, { boot_interface: 'pxe', deploy_interface: 'ramdisk', power_interface: 'ipmitool', management_interface: 'ipmitool' });
  const registry = createDriverRegistry({ bootEnvironment: new RecordingBootEnvironment(), agentApiUrl: 'http://api.example:6385' });
  const task = makeTask(registry, node);
  if (type === 'boot') {
    await task.driver.boot.validate(task);
    await task.driver.boot.prepareRamdisk(task);
    await task.driver.boot.prepareInstance(task);
  } else if (type === 'deploy') {
    await task.driver.deploy.validate(task);
    await task.driver.deploy.prepare(task);
  } else {
    try {
      await task.driver[type].validate(task);
    } catch (err) {
      // The `no-*` implementations refuse before reading anything: that is all they do.
      if (!(err instanceof UnsupportedDriverExtension && name.startsWith('no-'))) throw err;
    }
  }
}

const declared = Object.entries(INTERFACE_FIELDS).map(([id, fields]) => {
  const [type, name] = id.split('/') as [ImplementedInterfaceType, string];
  return { id, type, name, fields };
});
const path = (f: DriverField): string => `${f.bag}.${f.key}`;

/** fullBags() without the keys `fields` lists as optional. */
function withoutOptional(fields: readonly DriverField[]): Record<Bag, Record<string, unknown>> {
  const bags = fullBags();
  for (const f of fields.filter((x) => x.requiredFor === undefined)) delete bags[f.bag][f.key];
  return bags;
}

describe('INTERFACE_FIELDS', () => {
  it('names only implemented interfaces of the built-in hardware types', () => {
    for (const { id, type, name } of declared) {
      expect(IMPLEMENTED_INTERFACE_TYPES, id).toContain(type);
      expect([...FAKE_HARDWARE.supported[type], ...IPMI_HARDWARE.supported[type]], id).toContain(name);
    }
  });

  describe.each(declared)('$id', ({ type, name, fields }) => {
    it('lists exactly the keys the implementation reads', async () => {
      // With every key set, and with only the required ones: a fallback (properties.capabilities
      // when instance_info.deploy_boot_mode is unset) is read only in the second.
      const read = new Set<string>();
      await exercise(type, name, fullBags(), read);
      await exercise(type, name, withoutOptional(fields), read);
      expect([...read].sort()).toEqual([...new Set(fields.map(path))].sort());
    });

    it.each(fields.filter((f) => f.requiredFor !== undefined).map((f) => [path(f), f] as const))('refuses to work without %s, naming it', async (_, field) => {
      const bags = fullBags();
      delete bags[field.bag][field.key];
      const err = await exercise(type, name, bags).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidParameterValue);
      expect((err as Error).message).toContain(path(field));
    });

    it('works without any of its optional keys', async () => {
      await expect(exercise(type, name, withoutOptional(fields))).resolves.toBeUndefined();
    });
  });

  it('leaves out only implementations that read nothing', async () => {
    for (const type of IMPLEMENTED_INTERFACE_TYPES) {
      const names = new Set([...FAKE_HARDWARE.supported[type], ...IPMI_HARDWARE.supported[type]]);
      for (const name of names) {
        if (INTERFACE_FIELDS[`${type}/${name}`] !== undefined) continue;
        const read = new Set<string>();
        await exercise(type, name, fullBags(), read);
        expect([...read], `${type}/${name} reads fields but INTERFACE_FIELDS does not list them`).toEqual([]);
      }
    }
  });
});

describe('docs/driver-fields.md', () => {
  it('is the page generated from INTERFACE_FIELDS (regenerate with npm run docs:driver-fields)', () => {
    expect(readFileSync(DOC_PATH, 'utf8')).toBe(renderDriverFieldsDoc());
  });
});
