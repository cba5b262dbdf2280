/**
 * GRUB config (UEFI over TFTP). Paths are relative to the TFTP root, as Ironic writes them; GRUB
 * passes them to the TFTP server as they are. `linux`/`initrd` rather than Ironic's `linuxefi`,
 * which upstream GRUB (2.06+) does not have: its `linux` boots EFI-stub kernels itself.
 */
import type { BootLabel } from '../types.js';
import type { BootConfigParams } from './params.js';
import { joinParams, NODE_FILES, renderedLabels } from './params.js';

// Words GRUB's script lexer reads as they are (grub-core/script/yylex.l): no `$` expansion, no
// quoting, no `;` `|` `&` `<` `>` `{` `}` tokens, no `#` comment, no wildcard.
const GRUB_PLAIN = /^[A-Za-z0-9_.,:/=+@%-]+$/;

/**
 * Kernel parameters as GRUB words that reach the kernel as written: split where GRUB would split
 * them (whitespace outside double quotes, which group and are dropped, as GRUB drops them and
 * re-quotes an argument with spaces for the kernel), every other character literal. A word with
 * anything but plain characters is single-quoted, so `$`, `;`, `}` or `#` in a parameter can
 * neither expand, run a command, close the menu entry nor cut the line.
 */
export function grubWords(params: string): string {
  const words: string[] = [];
  let word: string | null = null;
  let quoted = false;
  for (const ch of params) {
    if (ch === '"') {
      quoted = !quoted;
      word ??= '';
    } else if (!quoted && /\s/.test(ch)) {
      if (word !== null) words.push(word);
      word = null;
    } else {
      word = (word ?? '') + ch;
    }
  }
  if (word !== null) words.push(word);
  return words.map((w) => (GRUB_PLAIN.test(w) ? w : `'${w.replaceAll("'", "'\\''")}'`)).join(' ');
}

/** Renders a node's GRUB config with the `deploy` and/or `boot_ramdisk` menu entries. */
export function renderGrub(p: BootConfigParams): string {
  const dir = p.uuid;
  const entries: Record<BootLabel, string[]> = {
    deploy: [
      'menuentry "deploy" {',
      `    linux ${joinParams(`${dir}/${NODE_FILES.deployKernel}`, grubWords(joinParams(p.appendParams, p.deployParams)))}`,
      `    initrd ${dir}/${NODE_FILES.deployRamdisk}`,
      '}',
      '',
    ],
    boot_ramdisk: [
      'menuentry "boot_ramdisk" {',
      `    linux ${joinParams(`${dir}/${NODE_FILES.kernel}`, 'root=/dev/ram0', grubWords(joinParams(p.appendParams, p.ramdiskParams)))}`,
      `    initrd ${dir}/${NODE_FILES.ramdisk}`,
      '}',
      '',
    ],
    // Back to the firmware, which goes on to its next boot entry: the disk.
    localboot: ['menuentry "localboot" {', '    exit', '}', ''],
  };
  return [`set default=${p.label}`, 'set timeout=5', 'set hidden_timeout_quiet=false', '', ...renderedLabels(p).flatMap((label) => entries[label])].join('\n');
}
