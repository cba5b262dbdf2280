/**
 * What every benchmark's command line shares: `--json` (one JSON object on the last line; the
 * progress lines then go to stderr), `--name value` options, and the median and rounding the
 * printed figures use.
 */
export interface BenchArgs {
  asJson: boolean;
  /** The value after `name`, or undefined when the option is absent. */
  option(name: string): string | undefined;
  /** A progress line: stdout, or stderr under `--json` so the last stdout line stays the JSON. */
  say(line: string): void;
}

export function benchArgs(args: readonly string[] = process.argv.slice(2)): BenchArgs {
  const asJson = args.includes('--json');
  return {
    asJson,
    option(name) {
      const i = args.indexOf(name);
      return i >= 0 ? args[i + 1] : undefined;
    },
    say(line) {
      if (!asJson) console.log(line);
      else console.error(line);
    },
  };
}

export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export const round = (x: number, digits = 2): number => Number(x.toFixed(digits));
