/**
 * Plain input types of the boot environment. The conductor maps its database rows onto these; `boot`
 * knows no database and no HTTP API.
 */

/** Firmware boot mode: legacy BIOS (PXELINUX) or UEFI (GRUB). */
export const BOOT_MODES = ['bios', 'uefi'] as const;
export type BootMode = (typeof BOOT_MODES)[number];

/**
 * How the node network-boots: `pxe` serves config and images over TFTP (PXELINUX for BIOS, GRUB for
 * UEFI); `ipxe` chain-loads iPXE, which fetches config and images over HTTP.
 */
export const BOOT_INTERFACES = ['pxe', 'ipxe'] as const;
export type BootInterface = (typeof BOOT_INTERFACES)[number];

/** Template labels that boot images: the deploy ramdisk, or the instance's kernel and ramdisk. */
export const BOOT_LABELS = ['deploy', 'boot_ramdisk'] as const;
/**
 * The label that boots no image: it hands the machine over to its local disk (an instance the
 * `direct` deploy wrote), for firmware that tries the network before the disk whatever the BMC
 * was told (Ironic's netboot fallback).
 */
export const LOCAL_BOOT_LABEL = 'localboot';
export type BootLabel = (typeof BOOT_LABELS)[number] | typeof LOCAL_BOOT_LABEL;
/** Every label, in template order. */
export const ALL_BOOT_LABELS: readonly BootLabel[] = [...BOOT_LABELS, LOCAL_BOOT_LABEL];

/** Config file formats, one per boot loader. */
export const CONFIG_FORMATS = ['pxelinux', 'ipxe', 'grub'] as const;
export type ConfigFormat = (typeof CONFIG_FORMATS)[number];

/** Checksum algorithms an image may be verified with. */
export const CHECKSUM_ALGORITHMS = ['sha256', 'sha512', 'md5'] as const;
export type ChecksumAlgorithm = (typeof CHECKSUM_ALGORITHMS)[number];

/** The node whose boot files are prepared. */
export interface BootNode {
  /** Canonical uuid; names the node's directory. */
  uuid: string;
  /** Default `bios`. */
  bootMode?: BootMode;
  /** Default: the environment's `defaultBootInterface`. */
  bootInterface?: BootInterface;
  /** The active label of the config. Default `deploy`. */
  label?: BootLabel;
  /**
   * Extra kernel parameters of this node's deploy ramdisk (`deploy` label), after the environment's
   * `appendParams` and `deployParams` (Ironic: `driver_info.kernel_append_params` plus the agent's).
   */
  deployKernelParams?: string;
  /**
   * Extra kernel parameters of this node's instance (`boot_ramdisk` label), after the environment's
   * `appendParams` and `ramdiskParams` (Ironic: `instance_info.kernel_append_params`).
   */
  instanceKernelParams?: string;
}

/** A NIC of the node. Only ports with `pxeEnabled` get per-MAC links and DHCP entries. */
export interface BootPort {
  /** MAC address, `aa:bb:cc:dd:ee:ff` (either case; `-` separators accepted). */
  address: string;
  pxeEnabled: boolean;
}

/** Where an image comes from and what it must hash to. */
export interface ImageSource {
  /** `file://`, `http://` or `https://`. */
  url: string;
  /** `sha256:<hex>`, `sha512:<hex>` or `md5:<hex>`; required, verified before the file is used. */
  checksum: string;
}

/**
 * The images a node boots: the deploy pair for the `deploy` label, the instance pair for
 * `boot_ramdisk`. The config holds a label for each pair given, so an instance booted from its own
 * kernel and ramdisk needs (and fetches) no deploy images.
 */
export interface BootImages {
  deployKernel?: ImageSource;
  deployRamdisk?: ImageSource;
  kernel?: ImageSource;
  ramdisk?: ImageSource;
}

/** Keys of `BootImages`, in the order files are linked. */
export const IMAGE_ROLES = ['deployKernel', 'deployRamdisk', 'kernel', 'ramdisk'] as const;
export type ImageRole = (typeof IMAGE_ROLES)[number];

/** The subset of a pino logger the boot code uses. */
export interface BootLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}
