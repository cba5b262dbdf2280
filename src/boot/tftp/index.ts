/** The embedded read-only TFTP server (DESIGN §6): start it with {@link startTftpServer}. */
export { startTftpServer } from './server.js';
export type { TftpServer, TftpServerOptions, TftpStats } from './server.js';
export { BLKSIZE_MAX, BLKSIZE_MIN } from './options.js';
