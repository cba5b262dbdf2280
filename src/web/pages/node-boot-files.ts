/**
 * The node page's boot files as its owner conductor holds them: read from that conductor's
 * `GET /v1/nodes/{uuid}/boot-files` (`conductor/boot-files-rpc.ts`) at the `rpc_url` of its row,
 * with the RPC credentials (`../conductor-get.ts`: 1.5 s, 1 MiB), and shown as a table. The answer
 * is checked like any input from outside; an owner that does not answer, or answers anything but a
 * listing, is "not reported: <reason>" — never a guess.
 */
import { BOOT_FILE_KINDS, BOOT_FILE_ROOTS, MAX_BOOT_FILES } from '../../boot/node-files.js';
import type { BootFileEntry, BootFileRoot } from '../../boot/node-files.js';
import { conductorGet } from '../conductor-get.js';
import type { WebDeps } from '../deps.js';
import { html } from '../html.js';
import type { Html } from '../html.js';

/** What the owner reported. */
export interface BootFilesReport {
  conductor: string;
  owned: boolean;
  affinityHere: boolean;
  files: BootFileEntry[];
  truncated: boolean;
}

export type BootFilesResult = { ok: true; report: BootFilesReport } | { ok: false; reason: string };

const ROOT_NAMES: Record<BootFileRoot, string> = { tftp: 'TFTP root', http: 'HTTP root', dhcp_hosts: 'dnsmasq hosts', dhcp_opts: 'dnsmasq options' };

const isText = (v: unknown, max: number): v is string => typeof v === 'string' && v.length > 0 && v.length <= max;
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function entryOf(raw: unknown): BootFileEntry | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const e = raw as Record<string, unknown>;
  if (!(BOOT_FILE_ROOTS as readonly unknown[]).includes(e.root) || !(BOOT_FILE_KINDS as readonly unknown[]).includes(e.kind)) return null;
  if (!isText(e.path, 4096) || !isCount(e.size) || !isText(e.modified, 40) || Number.isNaN(Date.parse(e.modified))) return null;
  const entry: BootFileEntry = { root: e.root as BootFileRoot, path: e.path, kind: e.kind as BootFileEntry['kind'], size: e.size, modified: new Date(e.modified).toISOString() };
  if (e.hard_links !== undefined) {
    if (!isCount(e.hard_links)) return null;
    entry.hard_links = e.hard_links;
  }
  if (entry.kind === 'symlink') {
    if (e.target !== null && !isText(e.target, 4096)) return null;
    entry.target = e.target;
    entry.target_outside_root = e.target_outside_root === true || e.target === null;
  }
  return entry;
}

/** A conductor's answer checked field by field; null when it is not a boot file listing. */
export function parseBootFiles(text: string): BootFilesReport | null {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof body !== 'object' || body === null) return null;
  const b = body as Record<string, unknown>;
  if (!isText(b.conductor, 255) || typeof b.owned !== 'boolean' || typeof b.affinity_here !== 'boolean' || typeof b.truncated !== 'boolean') return null;
  if (!Array.isArray(b.files) || b.files.length > MAX_BOOT_FILES) return null;
  const files = b.files.map(entryOf);
  if (files.some((f) => f === null)) return null;
  return { conductor: b.conductor, owned: b.owned, affinityHere: b.affinity_here, files: files as BootFileEntry[], truncated: b.truncated };
}

/** Reads node `uuid`'s boot files from conductor `owner` (its row's `rpc_url`). */
export async function readBootFiles(deps: WebDeps, owner: string, uuid: string): Promise<BootFilesResult> {
  const row = await deps.store.db.selectFrom('conductors').select('rpc_url').where('hostname', '=', owner).executeTakeFirst();
  const rpcUrl = row?.rpc_url ?? null;
  if (rpcUrl === null || !/^https?:\/\//.test(rpcUrl)) return { ok: false, reason: `${owner} publishes no http(s) RPC address` };
  let text: string;
  try {
    text = await conductorGet(deps.config, rpcUrl, `/v1/nodes/${encodeURIComponent(uuid)}/boot-files`);
  } catch (err) {
    return { ok: false, reason: `${owner} did not list them (${(err as Error).message.slice(0, 300)})` };
  }
  const report = parseBootFiles(text);
  if (report === null) return { ok: false, reason: `${owner} answered something other than a boot file listing` };
  if (report.conductor !== owner) return { ok: false, reason: `the RPC address of ${owner} is answered by another conductor` };
  return { ok: true, report };
}

function kindCell(f: BootFileEntry): Html {
  if (f.kind === 'symlink') return f.target_outside_root === true || typeof f.target !== 'string' ? html`symlink → <em>outside root</em>` : html`symlink → <span class="mono">${f.target}</span>`;
  if (f.kind === 'file' && f.hard_links !== undefined && f.hard_links > 1) return html`file <span class="muted">(${f.hard_links} links)</span>`;
  return html`${f.kind}`;
}

/** The boot files as the owner reported them, or why they are not shown. */
export function bootFilesTable(owner: string, result: BootFilesResult): Html {
  if (!result.ok) return html`<p data-testid="boot-files">Files on ${owner}: <span class="muted">not reported: ${result.reason}</span></p>`;
  const { report } = result;
  const note = report.owned ? '' : html` It does not own the node on its ring now (the ring moved since), so they may be about to go.`;
  if (report.files.length === 0) return html`<p data-testid="boot-files">${owner} holds no boot files for this node.${note}</p>`;
  const rows = report.files.map(
    (f) =>
      html`<tr><td>${ROOT_NAMES[f.root]}</td><td class="mono">${f.path}</td><td>${kindCell(f)}</td><td>${f.kind === 'directory' ? html`<span class="muted">—</span>` : `${f.size} bytes`}</td><td class="mono">${f.modified.replace(/\.\d{3}Z$/, 'Z')}</td></tr>`,
  );
  return html`<p>As listed by ${owner} from its disk: ${report.files.length} entr${report.files.length === 1 ? 'y' : 'ies'}${report.truncated ? html` <strong>(cut at ${MAX_BOOT_FILES}; there are more)</strong>` : ''}.${note}</p>
<div class="table-wrap"><table data-testid="boot-files"><thead><tr><th scope="col">Root</th><th scope="col">Path</th><th scope="col">Kind</th><th scope="col">Size</th><th scope="col">Modified</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}
