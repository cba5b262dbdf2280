/**
 * The config drive's JSON form, built into the ISO the agent writes (the conductor's half of
 * Ironic's `configdrive` as a JSON object, API 1.56, or an object in `instance_info.configdrive`).
 *
 * The layout is what cloud-init's ConfigDrive source and Ironic's builder agree on: an ISO 9660
 * file system labelled `config-2` (Rock Ridge and Joliet names) holding, for the metadata versions
 * `2012-08-10` and `latest`, `openstack/<version>/meta_data.json`, and when given
 * `network_data.json`, `vendor_data2.json` and `user_data`. `meta_data` gets the node's `uuid` and
 * `name` where it has none, as Ironic fills them in. The result is gzipped and base64-encoded: the
 * same text a client sends for the ISO form, so the agent sees one format.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { InvalidParameter } from '../common/errors.js';

const run = promisify(execFile);

/** The keys of the JSON form. */
export const CONFIG_DRIVE_KEYS = ['meta_data', 'network_data', 'user_data', 'vendor_data'] as const;
/** The metadata versions written, oldest first. */
const VERSIONS = ['2012-08-10', 'latest'];
/** The largest config drive the agent writes (its partition is 64 MiB). */
export const MAX_CONFIG_DRIVE_ISO_BYTES = 64 * 1024 * 1024;
/** Programs that take genisoimage's options, tried in order (Ironic's list). */
const ISO_TOOLS = ['genisoimage', 'mkisofs', 'xorrisofs'];

export interface ConfigDriveSpec {
  meta_data?: Record<string, unknown>;
  network_data?: Record<string, unknown>;
  user_data?: string | Record<string, unknown> | unknown[];
  vendor_data?: Record<string, unknown>;
}

const bad = (field: string, reason: string) => new InvalidParameter(`${field}: ${reason}`);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Checks the JSON form; throws `InvalidParameter` (400) naming `field` and the key at fault.
 * `meta_data`, `network_data` and `vendor_data` are objects; `user_data` is text, an object or a
 * list (the last two are stored as JSON, as Ironic does).
 */
export function checkConfigDriveSpec(value: unknown, field = 'configdrive'): ConfigDriveSpec {
  if (!isObject(value)) throw bad(field, 'the JSON form is an object with meta_data, network_data, user_data and vendor_data');
  const unknown = Object.keys(value).filter((k) => !(CONFIG_DRIVE_KEYS as readonly string[]).includes(k));
  if (unknown.length > 0) throw bad(field, `unexpected key(s) ${unknown.map((k) => JSON.stringify(k)).join(', ')}; valid: ${CONFIG_DRIVE_KEYS.join(', ')}`);
  for (const key of ['meta_data', 'network_data', 'vendor_data'] as const) {
    if (value[key] !== undefined && value[key] !== null && !isObject(value[key])) throw bad(`${field}.${key}`, 'must be an object');
  }
  const userData = value.user_data;
  if (userData !== undefined && userData !== null && typeof userData !== 'string' && typeof userData !== 'object') {
    throw bad(`${field}.user_data`, 'must be text, an object or a list');
  }
  return value as ConfigDriveSpec;
}

export interface BuildConfigDriveOptions {
  /** The ISO program; by default the first of genisoimage, mkisofs, xorrisofs that runs. */
  isoTool?: string;
  /** Where the temporary tree is made. Default: the system's temporary directory. */
  tmpDir?: string;
  /** The field errors name. Default `configdrive`. */
  field?: string;
}

/**
 * Builds the config drive for `node` from its JSON form: gzipped, base64-encoded ISO 9660 text.
 * Throws `InvalidParameter` for a bad spec or a drive over 64 MiB, and an Error naming the
 * Debian package when no ISO program is installed.
 */
export async function buildConfigDrive(node: { uuid: string; name: string | null }, value: unknown, options: BuildConfigDriveOptions = {}): Promise<string> {
  const field = options.field ?? 'configdrive';
  const spec = checkConfigDriveSpec(value, field);
  const metaData: Record<string, unknown> = { ...(spec.meta_data ?? {}) };
  if (metaData.uuid === undefined) metaData.uuid = node.uuid;
  if (metaData.name === undefined && node.name) metaData.name = node.name;
  const userData = spec.user_data === undefined || spec.user_data === null || spec.user_data === '' ? null : typeof spec.user_data === 'string' ? spec.user_data : JSON.stringify(spec.user_data);

  const dir = await mkdtemp(join(options.tmpDir ?? tmpdir(), 'ironring-configdrive-'));
  try {
    const tree = join(dir, 'tree');
    for (const version of VERSIONS) {
      const at = join(tree, 'openstack', version);
      await mkdir(at, { recursive: true });
      await writeFile(join(at, 'meta_data.json'), JSON.stringify(metaData));
      if (isObject(spec.network_data) && Object.keys(spec.network_data).length > 0) await writeFile(join(at, 'network_data.json'), JSON.stringify(spec.network_data));
      if (isObject(spec.vendor_data) && Object.keys(spec.vendor_data).length > 0) await writeFile(join(at, 'vendor_data2.json'), JSON.stringify(spec.vendor_data));
      if (userData !== null) await writeFile(join(at, 'user_data'), userData);
    }
    const iso = join(dir, 'configdrive.iso');
    const args = ['-o', iso, '-ldots', '-allow-lowercase', '-allow-multidot', '-l', '-publisher', 'ironring', '-quiet', '-J', '-r', '-V', 'config-2', tree];
    let made = false;
    let missing: string[] = [];
    for (const tool of options.isoTool ? [options.isoTool] : ISO_TOOLS) {
      try {
        await run(tool, args, { timeout: 60_000, maxBuffer: 1024 * 1024 });
        made = true;
        break;
      } catch (err) {
        const e = err as NodeJS.ErrnoException & { stderr?: string };
        if (e.code === 'ENOENT') {
          missing = [...missing, tool];
          continue;
        }
        throw new Error(`${tool} could not build the config drive: ${(e.stderr ?? e.message).trim().split('\n').pop()}`);
      }
    }
    if (!made) throw new Error(`no ISO 9660 program to build the config drive (tried ${missing.join(', ')}; Debian: genisoimage or xorriso)`);
    const data = await readFile(iso);
    if (data.length > MAX_CONFIG_DRIVE_ISO_BYTES) throw bad(field, `the built config drive is ${data.length} bytes; at most ${MAX_CONFIG_DRIVE_ISO_BYTES} fit its partition`);
    return gzipSync(data).toString('base64');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
