import { describe, expect, it } from 'vitest';
import { activeBootLabel, renderBootConfig, renderBootIpxe, switchBootLabel } from '../../src/boot/templates/index.js';
import type { BootConfigParams } from '../../src/boot/templates/index.js';
import { InvalidBootInput } from '../../src/boot/errors.js';
import { BOOT_LABELS, CONFIG_FORMATS } from '../../src/boot/types.js';

const UUID = '1be26c0b-03f2-4d2e-ae87-c02d7f33c123';
const base: BootConfigParams = {
  uuid: UUID,
  label: 'deploy',
  appendParams: 'nofb vga=normal',
  deployParams: 'ipa-api-url=http://10.0.0.5:6385',
  ramdiskParams: 'quiet',
  httpUrl: 'http://10.0.0.5:8080',
};

describe('PXELINUX template', () => {
  it('boots the deploy ramdisk by default with paths relative to the TFTP root', () => {
    const text = renderBootConfig('pxelinux', base);
    expect(text.split('\n')[0]).toBe('default deploy');
    expect(text).toContain(`label deploy\nkernel ${UUID}/deploy_kernel\nappend initrd=${UUID}/deploy_ramdisk nofb vga=normal ipa-api-url=http://10.0.0.5:6385\nipappend 2`);
    expect(text).toContain(`label boot_ramdisk\nkernel ${UUID}/kernel\nappend initrd=${UUID}/ramdisk root=/dev/ram0 nofb vga=normal quiet`);
  });

  it('selects boot_ramdisk when asked', () => {
    expect(renderBootConfig('pxelinux', { ...base, label: 'boot_ramdisk' }).split('\n')[0]).toBe('default boot_ramdisk');
  });
});

describe('iPXE template', () => {
  it('fetches images from http_url and retries a label on a failed download', () => {
    const text = renderBootConfig('ipxe', base);
    expect(text.startsWith('#!ipxe\n\ngoto deploy\n')).toBe(true);
    expect(text).toContain(
      `kernel http://10.0.0.5:8080/${UUID}/deploy_kernel nofb vga=normal ipa-api-url=http://10.0.0.5:6385 BOOTIF=\${mac} initrd=deploy_ramdisk || goto deploy`,
    );
    expect(text).toContain(`initrd http://10.0.0.5:8080/${UUID}/ramdisk || goto boot_ramdisk`);
  });

  it('adds --timeout to downloads when configured', () => {
    expect(renderBootConfig('ipxe', { ...base, ipxeTimeoutMs: 60000 })).toContain(`kernel --timeout 60000 http://10.0.0.5:8080/${UUID}/deploy_kernel`);
  });

  it('refuses to render without http_url', () => {
    expect(() => renderBootConfig('ipxe', { ...base, httpUrl: undefined })).toThrow(InvalidBootInput);
  });

  it('boot.ipxe chains the per-MAC config of each NIC', () => {
    const text = renderBootIpxe();
    expect(text.startsWith('#!ipxe\n')).toBe(true);
    expect(text).toContain('chain pxelinux.cfg/${net${netid}/mac:hexhyp} || goto loop');
  });
});

describe('GRUB template', () => {
  it('sets the default menu entry and uses linux/initrd with TFTP-root-relative paths', () => {
    const text = renderBootConfig('grub', base);
    expect(text.split('\n')[0]).toBe('set default=deploy');
    expect(text).toContain(`menuentry "deploy" {\n    linux ${UUID}/deploy_kernel nofb vga=normal ipa-api-url=http://10.0.0.5:6385\n    initrd ${UUID}/deploy_ramdisk\n}`);
    expect(text).toContain(`menuentry "boot_ramdisk" {\n    linux ${UUID}/kernel root=/dev/ram0 nofb vga=normal quiet\n    initrd ${UUID}/ramdisk\n}`);
  });
});

describe('switching the active label', () => {
  for (const format of CONFIG_FORMATS) {
    for (const from of BOOT_LABELS) {
      for (const to of BOOT_LABELS) {
        it(`${format}: ${from} → ${to} gives exactly the config rendered for ${to}`, () => {
          const switched = switchBootLabel(renderBootConfig(format, { ...base, label: from }), format, to);
          expect(switched).toBe(renderBootConfig(format, { ...base, label: to }));
          expect(activeBootLabel(switched, format)).toBe(to);
        });
      }
    }
  }

  it('rewrites only the selector line of an iPXE script, not the retry gotos', () => {
    const switched = switchBootLabel(renderBootConfig('ipxe', base), 'ipxe', 'boot_ramdisk');
    expect(switched).toContain('|| goto deploy');
    expect(switched.match(/^goto /gm)).toHaveLength(1);
  });

  it('refuses a config without a selector line', () => {
    expect(() => switchBootLabel('label deploy\n', 'pxelinux', 'deploy')).toThrow(InvalidBootInput);
    expect(activeBootLabel('nothing', 'grub')).toBeNull();
  });
});
