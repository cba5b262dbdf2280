/**
 * A small interpreter for the iPXE commands ironring's scripts use, following iPXE's own rules
 * (src/core/exec.c, src/image/script.c, ipxe.org/cmd): a line is split on whitespace (no quoting);
 * `||`, `&&` and `;` chain commands, a token starting with `#` ends the line; `${name}` expands a
 * setting (innermost first, `:hexhyp` formats a MAC); a failing line ends the script unless `goto`
 * left it; `sleep` takes whole seconds, `prompt --timeout` milliseconds and fails when no key is
 * pressed. Commands it does not know throw, so a test never passes on a command it did not model.
 *
 * Settings live for the whole run, across `chain` and `dhcp`, as iPXE's do until the machine
 * reboots. `chain` of a URL the world has a script for runs that script in place (nested, as iPXE
 * does without `--replace`): when it ends without booting, `chain` returns its status to the
 * caller. Relative URLs resolve against the URL of the script that names them, when it is known.
 * `dhcp` asks the world and merges its answer into the settings; like iPXE, it keeps settings the
 * new answer does not carry (a ProxyDHCP answer from before stays when no ProxyDHCP answers now).
 */

/** What the machine around the script does. */
export interface IpxeWorld {
  /** Whether a download (kernel, initrd, chain) of `url` succeeds. Default: every one does. */
  fetch?: (url: string) => boolean;
  /** Whether a key is pressed during `prompt`. Default: no. */
  keyPressed?: boolean;
  /** Settings present before the script runs, e.g. `net0/mac`. */
  settings?: Record<string, string>;
  /** The URL the script was fetched from: relative URLs in it resolve against it. */
  url?: string;
  /** The script a successful download of `url` holds, for `chain` to run; undefined: not a script. */
  script?: (url: string) => string | undefined;
  /** The settings one `dhcp` yields (e.g. `filename`), or null when nobody answers. Default: nobody. */
  dhcp?: () => Record<string, string> | null;
}

/** How a run ended and what it did on the way. */
export interface IpxeRun {
  outcome: 'booted' | 'rebooted' | 'chained' | 'failed' | 'ended' | 'steps-exhausted';
  /** The line that failed and ended the script, for `failed`. */
  failedLine?: string;
  /** URLs of every download attempted, in order. */
  downloads: string[];
  /** The kernel command line (arguments after the URL) of every `kernel` run, in order. */
  kernelArgs: string[][];
  /** Seconds of every `sleep`. */
  sleeps: number[];
  /** Milliseconds of every `prompt --timeout`. */
  prompts: number[];
  /** Labels jumped to, in order. */
  gotos: string[];
  /** The chained URL, for `chained`. */
  chained?: string;
  /** Every URL `chain` fetched (resolved), whether or not it was a script the run then ran. */
  chains: string[];
  /** How many times `dhcp` ran. */
  dhcps: number;
  /** The settings at the end of the run. */
  settings: Record<string, string>;
}

const KNOWN = new Set(['set', 'inc', 'iseq', 'isset', 'goto', 'sleep', 'echo', 'imgfree', 'kernel', 'initrd', 'boot', 'reboot', 'prompt', 'chain', 'exit', 'dhcp']);

/** Literal `goto` targets of a script that no `:label` line defines (computed ones are checked at run time). */
export function missingLabels(script: string): string[] {
  const lines = script.split('\n').map((l) => l.trim());
  const labels = new Set(lines.filter((l) => l.startsWith(':')).map((l) => l.slice(1)));
  const targets = lines.flatMap((l) => [...l.matchAll(/(?:^|\s)goto\s+(\S+)/g)].map((m) => m[1]!)).filter((t) => !t.includes('${'));
  return [...new Set(targets.filter((t) => !labels.has(t)))];
}

function expand(token: string, settings: Map<string, string>): string {
  let text = token;
  for (;;) {
    const start = text.lastIndexOf('${');
    if (start < 0) return text;
    const end = text.indexOf('}', start);
    if (end < 0) return text;
    const [name = '', type] = text.slice(start + 2, end).split(':');
    let value = settings.get(name) ?? '';
    if (type === 'hexhyp') value = value.replace(/:/g, '-');
    text = text.slice(0, start) + value + text.slice(end + 1);
  }
}

/** Splits `--opt value` options off the front of `args`. */
function options(args: string[]): { opts: Map<string, string>; rest: string[] } {
  const opts = new Map<string, string>();
  let i = 0;
  while (i < args.length && args[i]!.startsWith('--')) {
    opts.set(args[i]!.slice(2), args[i + 1] ?? '');
    i += 2;
  }
  return { opts, rest: args.slice(i) };
}

const integer = (text: string): number | null => (/^\d+$/.test(text) ? Number(text) : null);

/** `url` against the URL of the script naming it, when that is known and `url` is relative. */
function resolve(url: string, base: string | undefined): string {
  if (base === undefined) return url;
  return new URL(url, base).href;
}

/** Runs `script` in `world` for at most `maxLines` executed lines, chained scripts included. */
export function runIpxe(script: string, world: IpxeWorld = {}, maxLines = 2000): IpxeRun {
  const settings = new Map(Object.entries(world.settings ?? {}));
  const fetch = world.fetch ?? (() => true);
  const run: IpxeRun = { outcome: 'ended', downloads: [], kernelArgs: [], sleeps: [], prompts: [], gotos: [], chains: [], dhcps: 0, settings: {} };
  let executed = 0;
  let stop: IpxeRun['outcome'] | null = null;

  /** Runs one script to its end; returns its status (0: ran to the end) or leaves `stop` set. */
  const execScript = (text: string, base: string | undefined): number => {
    const lines = text.split('\n');
    if (lines[0] !== '#!ipxe') throw new Error(`not an iPXE script${base === undefined ? '' : ` (${base})`}: the first line must be #!ipxe`);
    let pc = 1;
    let jumped: number | null = null;

    const exec = (argv: string[]): number => {
      const [cmd, ...args] = argv;
      if (cmd === undefined) return 0;
      if (!KNOWN.has(cmd)) throw new Error(`iPXE simulator does not model command ${cmd}`);
      switch (cmd) {
        case 'set': {
          const [name = '', ...value] = args;
          settings.set(name.split(':')[0]!, value.join(' '));
          return 0;
        }
        case 'inc': {
          const [name = '', by = '1'] = args;
          const current = Number(settings.get(name) ?? '0');
          const step = Number(by);
          if (!Number.isInteger(current) || !Number.isInteger(step)) return 1;
          settings.set(name, String(current + step));
          return 0;
        }
        case 'iseq':
          if (args.length !== 2) return 1;
          return args[0] === args[1] ? 0 : 1;
        case 'isset':
          return args.length === 1 && args[0] !== '' ? 0 : 1;
        case 'goto': {
          const target = args[0] ?? '';
          const index = lines.findIndex((l) => l.trim() === `:${target}`);
          if (index < 0) return 1;
          run.gotos.push(target);
          jumped = index + 1;
          return 0;
        }
        case 'sleep': {
          const seconds = args.length === 1 ? integer(args[0]!) : null;
          if (seconds === null) return 1;
          run.sleeps.push(seconds);
          return 0;
        }
        case 'echo':
        case 'imgfree':
          return 0;
        case 'dhcp': {
          run.dhcps += 1;
          const answer = world.dhcp?.() ?? null;
          if (answer === null) return 1;
          for (const [name, value] of Object.entries(answer)) settings.set(name, value);
          return 0;
        }
        case 'kernel':
        case 'initrd':
        case 'chain': {
          const { opts, rest } = options(args);
          const timeout = opts.get('timeout');
          if (timeout !== undefined && integer(timeout) === null) return 1;
          const [given, ...cmdline] = rest;
          if (given === undefined || given === '') return 1;
          const url = resolve(given, base);
          run.downloads.push(url);
          if (cmd === 'chain') run.chains.push(url);
          if (!fetch(url)) return 1;
          if (cmd === 'kernel') run.kernelArgs.push(cmdline);
          if (cmd === 'chain') {
            run.chained = url;
            const chained = world.script?.(url);
            if (chained === undefined) {
              stop = 'chained';
              return 0;
            }
            return execScript(chained, url);
          }
          return 0;
        }
        case 'boot':
          stop = 'booted';
          return 0;
        case 'reboot':
          stop = 'rebooted';
          return 0;
        case 'exit':
          stop = 'ended';
          return Number(args[0] ?? '0');
        case 'prompt': {
          const { opts } = options(args);
          const timeout = opts.get('timeout');
          if (timeout !== undefined) {
            const ms = integer(timeout);
            if (ms === null) return 1;
            run.prompts.push(ms);
          }
          return world.keyPressed === true ? 0 : 1;
        }
      }
      return 1;
    };

    // exec.c's system(): commands chained by ||, && and ;, skipped ones keep the previous status.
    const system = (line: string): number => {
      const tokens = line.split(/\s+/).filter((t) => t !== '');
      const hash = tokens.findIndex((t) => t.startsWith('#'));
      if (hash >= 0) tokens.length = hash;
      let rc = 0;
      let process = true;
      let i = 0;
      for (;;) {
        let j = i;
        while (j < tokens.length && !['||', '&&', ';'].includes(tokens[j]!)) j += 1;
        if (process) rc = exec(tokens.slice(i, j).map((t) => expand(t, settings)));
        if (jumped !== null || stop !== null) return rc;
        if (j >= tokens.length) return rc;
        const op = tokens[j];
        process = op === ';' ? true : op === '&&' ? rc === 0 : rc !== 0;
        i = j + 1;
      }
    };

    while (pc < lines.length) {
      if (executed >= maxLines) {
        stop = 'steps-exhausted';
        return 1;
      }
      executed += 1;
      const line = lines[pc]!.trim();
      pc += 1;
      if (line === '' || line.startsWith(':')) continue;
      jumped = null;
      const rc = system(line);
      if (stop !== null) return rc;
      if (jumped !== null) {
        pc = jumped;
        continue;
      }
      if (rc !== 0) {
        run.failedLine = line;
        return rc;
      }
    }
    return 0;
  };

  const rc = execScript(script, world.url);
  const outcome: IpxeRun['outcome'] = stop ?? (rc === 0 ? 'ended' : 'failed');
  const result: IpxeRun = { ...run, outcome, settings: Object.fromEntries(settings) };
  if (outcome !== 'failed') delete result.failedLine;
  return result;
}
