#!/usr/bin/env node
// `npm ci` / `npm install` hook: builds the native TFTP transfer engine (native/tftp_engine.c) with
// node-gyp. A failed build is not fatal: the TFTP server then runs every transfer in JavaScript,
// and says so in its log. Set IRONRING_SKIP_NATIVE=1 to skip the build.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

if (process.env.IRONRING_SKIP_NATIVE === '1') process.exit(0);
if (process.platform !== 'linux') {
  console.warn('ironring: the native TFTP engine is built on Linux only; TFTP transfers will run in JavaScript');
  process.exit(0);
}

/** node-gyp as npm provides it to install scripts, else the one bundled with npm next to node. */
function nodeGyp() {
  const candidates = [process.env.npm_config_node_gyp];
  try {
    candidates.push(createRequire(path.join(path.dirname(process.execPath), '../lib/node_modules/npm/package.json')).resolve('node-gyp/bin/node-gyp.js'));
  } catch {
    // npm is elsewhere.
  }
  return candidates.find((c) => c && existsSync(c));
}

const gyp = nodeGyp();
if (!gyp) {
  console.warn('ironring: node-gyp not found; the native TFTP engine is not built and TFTP transfers will run in JavaScript');
  process.exit(0);
}
const args = [gyp, 'rebuild', '--release'];
// Headers of the running Node: Debian's nodejs installs them under /usr/include/node.
if (!process.env.npm_config_nodedir && existsSync('/usr/include/node/node_api.h')) args.push('--nodedir=/usr');
const result = spawnSync(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'] });
if (result.status !== 0) {
  console.warn('ironring: building the native TFTP engine failed (see above); TFTP transfers will run in JavaScript');
}
process.exit(0);
