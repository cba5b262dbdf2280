/**
 * Structured logs with pino: human-readable when stderr is a terminal, one JSON object per line
 * otherwise (for journald, log shippers and tests). Logs go to stderr so stdout stays clean for
 * command output such as `--format json`.
 */
import { destination, pino, stdTimeFunctions } from 'pino';
import type { Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

/** Log levels, most verbose first; `silent` logs nothing. The `[DEFAULT] log_level` option offers these. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface LoggerOptions {
  level: LogLevel;
  /** Force pretty (true) or JSON (false); by default pretty only on a terminal. */
  pretty?: boolean;
  /** Where to write; defaults to stderr (fd 2). */
  destination?: NodeJS.WritableStream;
}

export function createLogger(options: LoggerOptions): Logger {
  const usePretty = options.pretty ?? Boolean(process.stderr.isTTY);
  const base = { level: options.level, base: { pid: process.pid }, timestamp: stdTimeFunctions.isoTime };
  if (usePretty) {
    return pino(base, pretty({ colorize: true, sync: true, destination: 2, ignore: 'pid,hostname', translateTime: 'SYS:HH:MM:ss.l' }));
  }
  return pino(base, options.destination ?? destination({ fd: 2, sync: true }));
}
