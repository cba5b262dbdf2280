/**
 * Where a node's boot files live (DESIGN §6), as pure path arithmetic:
 *
 * - PXE (TFTP): `tftp_root/<uuid>/{config,deploy_kernel,deploy_ramdisk,kernel,ramdisk}`; PXELINUX
 *   finds its config through `tftp_root/pxelinux.cfg/01-aa-bb-cc-dd-ee-ff` → `../<uuid>/config`,
 *   GRUB through `tftp_root/grub.cfg-01-aa-bb-cc-dd-ee-ff` and `tftp_root/aa:bb:cc:dd:ee:ff.conf`
 *   → `<uuid>/config`.
 * - iPXE (HTTP): the same files under `http_root/<uuid>/`, found through
 *   `http_root/pxelinux.cfg/aa-bb-cc-dd-ee-ff` → `../<uuid>/config`, chained from `http_root/boot.ipxe`.
 *
 * Links are relative, so a root can be moved or served from a chroot.
 */
import { join } from 'node:path';
import { NODE_FILES } from './templates/params.js';
import { IMAGE_ROLES } from './types.js';
import type { BootInterface, BootMode, ConfigFormat, ImageRole } from './types.js';

/** The roots the layout lives under. */
export interface BootRoots {
  tftpRoot: string;
  /** Needed for iPXE nodes only. */
  httpRoot?: string;
}

/** A per-MAC symlink: where it is and what (relative) target it holds. */
export interface MacLink {
  path: string;
  target: string;
  format: ConfigFormat;
}

/** One node's files in one root. */
export interface NodeLayout {
  format: ConfigFormat;
  root: string;
  dir: string;
  config: string;
  /** The pxe-enabled MACs the layout was last prepared for, one per line: what clean-up must unlink. */
  manifest: string;
  images: Record<ImageRole, string>;
}

/** Name of the manifest file in a node directory. */
export const MANIFEST_NAME = 'macs';
/** Name of the global iPXE script in the HTTP root. */
export const BOOT_IPXE_NAME = 'boot.ipxe';
/** Directory of the per-MAC links of PXELINUX and iPXE. */
export const PXELINUX_CFG = 'pxelinux.cfg';

/** Which boot loader reads the node's config. */
export function configFormat(iface: BootInterface, mode: BootMode): ConfigFormat {
  if (iface === 'ipxe') return 'ipxe';
  return mode === 'uefi' ? 'grub' : 'pxelinux';
}

/** The root a format is served from. */
export function rootFor(format: ConfigFormat, roots: BootRoots): string {
  if (format !== 'ipxe') return roots.tftpRoot;
  if (roots.httpRoot === undefined) throw new Error('httpRoot is required for iPXE layouts');
  return roots.httpRoot;
}

/** `aa:bb:cc:dd:ee:ff` → `aa-bb-cc-dd-ee-ff`. */
export function macHyphen(mac: string): string {
  return mac.replaceAll(':', '-');
}

/** The files of node `uuid` in the layout of `format`. */
export function nodeLayout(uuid: string, format: ConfigFormat, roots: BootRoots): NodeLayout {
  const root = rootFor(format, roots);
  const dir = join(root, uuid);
  const images = Object.fromEntries(IMAGE_ROLES.map((role) => [role, join(dir, NODE_FILES[role])])) as Record<ImageRole, string>;
  return { format, root, dir, config: join(dir, NODE_FILES.config), manifest: join(dir, MANIFEST_NAME), images };
}

/** The per-MAC links through which the boot loader of `format` finds node `uuid`'s config. */
export function macLinks(format: ConfigFormat, roots: BootRoots, uuid: string, mac: string): MacLink[] {
  const root = rootFor(format, roots);
  switch (format) {
    case 'pxelinux':
      return [{ format, path: join(root, PXELINUX_CFG, `01-${macHyphen(mac)}`), target: `../${uuid}/${NODE_FILES.config}` }];
    case 'ipxe':
      return [{ format, path: join(root, PXELINUX_CFG, macHyphen(mac)), target: `../${uuid}/${NODE_FILES.config}` }];
    case 'grub':
      return [
        { format, path: join(root, `grub.cfg-01-${macHyphen(mac)}`), target: `${uuid}/${NODE_FILES.config}` },
        { format, path: join(root, `${mac}.conf`), target: `${uuid}/${NODE_FILES.config}` },
      ];
  }
}

/** Every per-MAC link any format could have for `mac` (iPXE only when there is an HTTP root). */
export function allMacLinks(roots: BootRoots, uuid: string, mac: string): MacLink[] {
  const formats: ConfigFormat[] = roots.httpRoot === undefined ? ['pxelinux', 'grub'] : ['pxelinux', 'grub', 'ipxe'];
  return formats.flatMap((f) => macLinks(f, roots, uuid, mac));
}
