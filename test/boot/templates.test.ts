import { describe, expect, it } from 'vitest';
import { activeBootLabel, renderBootConfig, renderBootIpxe, switchBootLabel } from '../../src/boot/templates/index.js';
import type { BootConfigParams } from '../../src/boot/templates/index.js';
import { InvalidBootInput } from '../../src/boot/errors.js';
import { BOOT_LABELS, CONFIG_FORMATS } from '../../src/boot/types.js';
import { missingLabels, runIpxe } from './ipxe-sim.js';

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
  it('fetches images from http_url and sends a failed download to the retry block', () => {
    const text = renderBootConfig('ipxe', base);
    expect(text.startsWith('#!ipxe\n')).toBe(true);
    expect(text.match(/^goto .*$/m)?.[0]).toBe('goto deploy');
    expect(text).toContain(
      `kernel http://10.0.0.5:8080/${UUID}/deploy_kernel nofb vga=normal ipa-api-url=http://10.0.0.5:6385 BOOTIF=\${mac} initrd=deploy_ramdisk || goto retry`,
    );
    expect(text).toContain(`initrd http://10.0.0.5:8080/${UUID}/ramdisk || goto retry`);
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

describe('configs hold only the labels they have images for', () => {
  const entry = { pxelinux: /^label (\S+)$/gm, grub: /^menuentry "([^"]+)" \{$/gm, ipxe: /^:(deploy|boot_ramdisk)$/gm } as const;
  for (const format of CONFIG_FORMATS) {
    it(`${format}: renders exactly the labels asked for, and refuses an active label outside them`, () => {
      for (const labels of [['deploy'], ['boot_ramdisk'], ['deploy', 'boot_ramdisk']] as const) {
        const text = renderBootConfig(format, { ...base, label: labels[0], labels });
        expect([...text.matchAll(entry[format])].map((m) => m[1])).toEqual(labels);
        if (format === 'ipxe') expect(missingLabels(text)).toEqual([]);
      }
      expect(() => renderBootConfig(format, { ...base, label: 'deploy', labels: ['boot_ramdisk'] })).toThrow(InvalidBootInput);
    });
  }
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
    const original = renderBootConfig('ipxe', base);
    const switched = switchBootLabel(original, 'ipxe', 'boot_ramdisk');
    expect(switched.split('\n').filter((l, i) => l !== original.split('\n')[i])).toEqual(['goto boot_ramdisk']);
    expect(switched).toContain('goto ${retry_label}');
  });

  it('refuses to select a label the config does not hold', () => {
    for (const format of CONFIG_FORMATS) {
      const instanceOnly = renderBootConfig(format, { ...base, label: 'boot_ramdisk', labels: ['boot_ramdisk'] });
      expect(() => switchBootLabel(instanceOnly, format, 'deploy'), format).toThrow(/deploy is not defined/);
      expect(switchBootLabel(instanceOnly, format, 'boot_ramdisk')).toBe(instanceOnly);
    }
  });

  it('refuses a config without a selector line', () => {
    expect(() => switchBootLabel('label deploy\n', 'pxelinux', 'deploy')).toThrow(InvalidBootInput);
    expect(activeBootLabel('nothing', 'grub')).toBeNull();
  });
});

describe('iPXE scripts run as iPXE runs them', () => {
  const deployKernel = `http://10.0.0.5:8080/${UUID}/deploy_kernel`;
  const instanceKernel = `http://10.0.0.5:8080/${UUID}/kernel`;

  it('boot.ipxe asks DHCP again after each pause and reboots after its prompt (milliseconds) when no NIC ever has a config, key or no key', () => {
    const script = renderBootIpxe();
    expect(missingLabels(script)).toEqual([]);
    const settings = { 'net0/mac': '52:54:00:12:34:56' };
    for (const keyPressed of [false, true]) {
      const run = runIpxe(script, { settings, keyPressed, fetch: () => false });
      expect(run.outcome).toBe('rebooted');
      expect(run.downloads).toEqual(['pxelinux.cfg/52-54-00-12-34-56']);
      expect(run.sleeps).toEqual([2, 4, 8, 16, 16]);
      expect(run.dhcps).toBe(5);
      // iPXE's prompt counts milliseconds: a pause people can read, short enough to retry soon.
      expect(run.prompts).toHaveLength(1);
      expect(run.prompts[0]).toBeGreaterThanOrEqual(5_000);
      expect(run.prompts[0]).toBeLessThanOrEqual(30_000);
    }
  });

  it('boot.ipxe chains the config of the first NIC that has one', () => {
    const settings = { 'net0/mac': '52:54:00:00:00:01', 'net1/mac': '52:54:00:00:00:02' };
    const run = runIpxe(renderBootIpxe(), { settings, fetch: (url) => url.endsWith('00-02') });
    expect(run).toMatchObject({ outcome: 'chained', chained: 'pxelinux.cfg/52-54-00-00-00-02' });
  });

  it('a per-node script boots its active label at once when the downloads work', () => {
    for (const label of BOOT_LABELS) {
      const script = renderBootConfig('ipxe', { ...base, label });
      expect(missingLabels(script)).toEqual([]);
      const run = runIpxe(script);
      expect(run.outcome).toBe('booted');
      expect(run.sleeps).toEqual([]);
      expect(run.downloads[0]).toBe(label === 'deploy' ? deployKernel : instanceKernel);
    }
  });

  it('backs off with growing sleeps (seconds) between retries and reboots after the last one', () => {
    for (const label of BOOT_LABELS) {
      const run = runIpxe(renderBootConfig('ipxe', { ...base, label }), { fetch: () => false });
      expect(run.outcome).toBe('rebooted');
      expect(run.sleeps).toEqual([2, 4, 8, 16, 16]);
      // The first download and one quick retry from this server; after that each try asks DHCP,
      // which nobody answers here.
      expect(run.downloads).toEqual(Array(2).fill(label === 'deploy' ? deployKernel : instanceKernel));
      expect(run.dhcps).toBe(4);
    }
  });

  it('retries a failed download once from the same server, without asking DHCP (a transient failure on a live owner)', () => {
    let failures = 1;
    const run = runIpxe(renderBootConfig('ipxe', { ...base, label: 'boot_ramdisk' }), {
      fetch: (url) => !(url.endsWith('/ramdisk') && failures-- > 0),
    });
    expect(run.outcome).toBe('booted');
    expect(run.sleeps).toEqual([2]);
    expect(run.dhcps).toBe(0);
    expect(run.downloads.filter((u) => u === instanceKernel)).toHaveLength(2);
    expect(run.downloads.every((u) => !u.includes('deploy_'))).toBe(true);
  });

  it('passes the download timeout in milliseconds to kernel and initrd', () => {
    const text = renderBootConfig('ipxe', { ...base, ipxeTimeoutMs: 60000 });
    const downloads = text.split('\n').filter((l) => /^(kernel|initrd) /.test(l));
    expect(downloads.length).toBeGreaterThan(0);
    for (const line of downloads) expect(line).toMatch(/^(kernel|initrd) --timeout 60000 http:/);
    expect(runIpxe(text).outcome).toBe('booted');
  });

  it("names each label's initrd on its kernel command line as iPXE names the image (the URL's last segment)", () => {
    for (const label of BOOT_LABELS) {
      const text = renderBootConfig('ipxe', { ...base, label });
      const run = runIpxe(text);
      const initrdUrl = run.downloads[1]!;
      expect(run.kernelArgs[0]).toContain(`initrd=${initrdUrl.slice(initrdUrl.lastIndexOf('/') + 1)}`);
    }
  });
});

/**
 * GRUB's reading of one command line (grub-core/script/yylex.l), enough to check what reaches the
 * kernel: single quotes literal, double quotes with `\` escapes, `\` escapes outside quotes, `$var`
 * expanded (to nothing here). A `;`, `|`, `&`, `<`, `>`, `{`, `}` or `#` outside quotes ends the
 * command or is syntax: reported as a `separator`, never part of an argument.
 */
function grubArgs(line: string): { args: string[]; separator?: string } {
  const args: string[] = [];
  let word: string | null = null;
  for (let i = 0; i < line.length; i += 1) {
    const ch = line[i]!;
    if (ch === "'") {
      const end = line.indexOf("'", i + 1);
      word = (word ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (ch === '"') {
      word ??= '';
      for (i += 1; line[i] !== '"'; i += 1) word += line[i] === '\\' ? line[++i] : line[i];
    } else if (ch === '\\') {
      word = (word ?? '') + line[++i];
    } else if (ch === '$') {
      const name = /^\$(\{[^}]*\}|[A-Za-z0-9_?#*@]+)/.exec(line.slice(i))![0];
      word ??= '';
      i += name.length - 1;
    } else if (/[;|&<>{}]/.test(ch) || (ch === '#' && word === null)) {
      if (word !== null) args.push(word);
      return { args, separator: ch };
    } else if (ch === ' ') {
      if (word !== null) args.push(word);
      word = null;
    } else {
      word = (word ?? '') + ch;
    }
  }
  if (word !== null) args.push(word);
  return { args };
}

describe('GRUB kernel parameters', () => {
  it('reach the kernel as written, whatever GRUB would read as syntax in them', () => {
    const params = `a;reboot x} $root #c dyndbg="file foo.c +p" it's {y} a|b`;
    for (const label of BOOT_LABELS) {
      const text = renderBootConfig('grub', { ...base, label, appendParams: params, deployParams: undefined, ramdiskParams: undefined });
      const line = text.split('\n').find((l) => l.startsWith('    linux ') && l.includes(label === 'deploy' ? '/deploy_kernel' : '/kernel'))!;
      const { args, separator } = grubArgs(line.trim());
      expect(separator, line).toBeUndefined();
      expect(args.slice(label === 'deploy' ? 2 : 3)).toEqual(['a;reboot', 'x}', '$root', '#c', 'dyndbg=file foo.c +p', "it's", '{y}', 'a|b']);
    }
  });

  it('leaves plain parameters unquoted', () => {
    const text = renderBootConfig('grub', { ...base, appendParams: 'console=ttyS0,115200n8 nofb ip=dhcp' });
    expect(text).toContain(`linux ${UUID}/deploy_kernel console=ttyS0,115200n8 nofb ip=dhcp ipa-api-url=http://10.0.0.5:6385\n`);
  });
});

describe('the localboot label (an instance on the local disk)', () => {
  const local: BootConfigParams = { ...base, label: 'localboot', labels: ['localboot'] };
  it('PXELINUX boots the first hard disk', () => {
    expect(renderBootConfig('pxelinux', local)).toBe('default localboot\n\nlabel localboot\nlocalboot 0\n');
  });
  it('GRUB hands back to the firmware, which goes on to the disk', () => {
    expect(renderBootConfig('grub', local)).toContain('set default=localboot');
    expect(renderBootConfig('grub', local)).toContain('menuentry "localboot" {\n    exit\n}');
  });
  it('iPXE sanboots the first BIOS disk, else exits with an error so that UEFI goes on; names no image', () => {
    const text = renderBootConfig('ipxe', local);
    expect(missingLabels(text)).toEqual([]);
    expect(text).toContain('goto localboot');
    expect(text).toContain(':localboot\necho Booting from the local disk\nsanboot --no-describe --drive 0x80 || goto localboot_exit\n:localboot_exit\nexit 1\n');
    expect(text).not.toMatch(/^(kernel|initrd) /m);
  });
  it('is held only when asked for: image configs stay as they were', () => {
    for (const format of CONFIG_FORMATS) expect(renderBootConfig(format, base)).not.toContain('localboot');
    expect(() => renderBootConfig('pxelinux', { ...base, label: 'localboot' })).toThrow(InvalidBootInput);
  });
});
