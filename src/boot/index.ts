/**
 * The boot environment of a conductor (DESIGN §6): per-node layouts and templates, the image cache,
 * the HTTP boot server and dnsmasq files. The embedded TFTP server lives in `./tftp/`.
 */
export { BootEnvironment } from './boot-environment.js';
export type { BootChanges, BootEnvironmentOptions } from './boot-environment.js';
export type { BootInspection, InspectedItem, ItemState } from './inspect.js';
export { ImageCache, masterName } from './image-cache.js';
export type { CacheEntry, CleanReport, ImageCacheOptions } from './image-cache.js';
export type { FetchFunction } from './image-fetch.js';
export { startHttpBootServer } from './http-boot.js';
export type { HttpBootServer, HttpBootServerOptions, HttpBootStats } from './http-boot.js';
export { DEFAULT_BOOT_FILES, removeDhcpEntries, renderDhcpEntries, writeDhcpEntries } from './dhcp.js';
export type { DhcpBootFiles, DhcpEntries, DhcpOptions } from './dhcp.js';
export type { SweepReport } from './sweep.js';
export { ImageChecksumMismatch, ImageDownloadFailed, ImageSourceNotAllowed, InvalidBootInput, UnsupportedImageSource } from './errors.js';
export { BLOCKED_FILE_PATHS, FILE_URL_OPTION } from './file-source.js';
export * from './types.js';
export { renderBootConfig, switchBootLabel, activeBootLabel, renderBootIpxe } from './templates/index.js';
export type { BootConfigParams } from './templates/index.js';
