/**
 * `rescue.finalize_rescue` (IPA's): the conductor sends the rescue password as the crypt hash
 * Ironic stores (`hashed: true`; SHA-256 or SHA-512 crypt, `$5$…`/`$6$…`), and the agent makes a
 * `rescue` user that logs in with it — in /etc/passwd and /etc/shadow of the ramdisk, uid 0 (the
 * ramdisk has no sudo; IPA gives its rescue user passwordless sudo, which comes to the same) — then
 * leaves a marker (`/run/ironring-rescue`) telling the ramdisk's /init to offer a login on the
 * console instead of starting the agent again. The password in clear never reaches the agent, and
 * the hash is written nowhere else (the command's recorded parameters are redacted).
 */
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CommandFailed } from './command-failed.js';

/** The user a rescued node logs in as (IPA's). */
export const RESCUE_USER = 'rescue';
/** The file whose presence tells the ramdisk's /init the node is rescued. */
export const RESCUE_MARKER = 'ironring-rescue';

/** A crypt(3) SHA-256 or SHA-512 hash, with or without `rounds=`. */
export const CRYPT_HASH = /^\$(5|6)\$(rounds=\d{4,9}\$)?[./0-9A-Za-z]{1,16}\$[./0-9A-Za-z]{43,86}$/;

export interface RescueRoots {
  /** Directory standing for /etc. */
  etc: string;
  /** Directory standing for /run. */
  run: string;
}

/** `lines` without the entry of `user`, with `entry` added. */
function replaceEntry(text: string, user: string, entry: string): string {
  const lines = text.split('\n').filter((l) => l !== '' && !l.startsWith(`${user}:`));
  return `${[...lines, entry].join('\n')}\n`;
}

async function readOrEmpty(file: string): Promise<string> {
  return readFile(file, 'utf8').catch(() => '');
}

/** Checks the parameters and sets the rescue user; resolves to what the agent reports. */
export async function finalizeRescue(params: Record<string, unknown>, roots: RescueRoots): Promise<string> {
  const hash = params.rescue_password;
  if (params.hashed !== true) throw new CommandFailed('rescue_password must come hashed ("hashed": true, as Ironic sends it): this agent never takes a password in clear', 'InvalidCommandParamsError');
  if (typeof hash !== 'string' || !CRYPT_HASH.test(hash)) throw new CommandFailed('rescue_password: expected a SHA-256 or SHA-512 crypt hash ($5$… or $6$…)', 'InvalidCommandParamsError');
  await mkdir(roots.etc, { recursive: true });
  const passwd = path.join(roots.etc, 'passwd');
  const shadow = path.join(roots.etc, 'shadow');
  let users = await readOrEmpty(passwd);
  // busybox login needs root's entry too; a locked one if the ramdisk has none.
  if (!/^root:/m.test(users)) users = replaceEntry(users, 'root', 'root:x:0:0:root:/root:/bin/sh');
  await writeFile(passwd, replaceEntry(users, RESCUE_USER, `${RESCUE_USER}:x:0:0:ironring rescue:/root:/bin/sh`), { mode: 0o644 });
  let secrets = await readOrEmpty(shadow);
  if (!/^root:/m.test(secrets)) secrets = replaceEntry(secrets, 'root', 'root:*:0:0:99999:7:::');
  await writeFile(shadow, replaceEntry(secrets, RESCUE_USER, `${RESCUE_USER}:${hash}:0:0:99999:7:::`), { mode: 0o600 });
  await chmod(shadow, 0o600);
  await mkdir(roots.run, { recursive: true });
  await writeFile(path.join(roots.run, RESCUE_MARKER), `${RESCUE_USER}\n`);
  return `user ${RESCUE_USER} set (${hash.startsWith('$6$') ? 'SHA-512' : 'SHA-256'} crypt); the console offers a login`;
}
