/**
 * The deploy agent's disk side: which disks exist (sysfs), which one gets the image (Ironic's root
 * device hints), streaming the image onto it, reading back its partition table, and erasing its
 * metadata (cleaning).
 */
export * from './block-devices.js';
export * from './errors.js';
export * from './image-writer.js';
export * from './partition-table.js';
export * from './root-device-hints.js';
export * from './config-drive.js';
export * from './erase-metadata.js';
