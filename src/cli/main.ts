/**
 * The `ironring` command: one binary, one subcommand per role (DESIGN §2).
 *
 * Every subcommand lives in `commands/` and returns a commander `Command`; this file only assembles
 * them and turns thrown errors into one-line messages and exit codes.
 */
import { Command, CommanderError } from 'commander';
import { IronringError, asError } from '../common/errors.js';
import { agentCommand } from './commands/agent.js';
import { apiCommand } from './commands/api.js';
import { allocationCommand } from './commands/allocation.js';
import { chassisCommand } from './commands/chassis.js';
import { deployTemplateCommand } from './commands/deploy-template.js';
import { portgroupCommand } from './commands/portgroup.js';
import { computeCommand } from './commands/compute.js';
import { conductorCommand } from './commands/conductor.js';
import { configCommand } from './commands/config.js';
import { manageCommand } from './commands/manage.js';
import { nodeCommand } from './commands/node.js';
import { shardCommand } from './commands/node-later.js';
import { portCommand } from './commands/port.js';
import { ramdiskCommand } from './commands/ramdisk.js';
import { ringCommand } from './commands/ring.js';
import { schedulerCommand } from './commands/scheduler.js';
import { serverCommand } from './commands/server.js';
import { upCommand } from './commands/up.js';
import { volumeCommand } from './commands/volume.js';
import { addGlobalOptions } from './context.js';

export function buildProgram(): Command {
  const program = new Command('ironring')
    .description(
      'Bare-metal provisioning control plane: conductors and compute services share machines ' +
        'through a consistent hash ring, and everything derived from ownership follows the ring.',
    )
    .version(VERSION, '-V, --version', 'print the ironring version')
    .showHelpAfterError('(run with --help for usage)')
    .configureHelp({ showGlobalOptions: true, sortSubcommands: true });
  addGlobalOptions(program);
  program.addCommand(upCommand());
  program.addCommand(manageCommand());
  program.addCommand(configCommand());
  program.addCommand(apiCommand());
  program.addCommand(agentCommand());
  program.addCommand(conductorCommand());
  program.addCommand(nodeCommand());
  program.addCommand(portCommand());
  program.addCommand(chassisCommand());
  program.addCommand(allocationCommand());
  program.addCommand(deployTemplateCommand());
  program.addCommand(shardCommand());
  program.addCommand(portgroupCommand());
  program.addCommand(volumeCommand());
  program.addCommand(ramdiskCommand());
  program.addCommand(ringCommand());
  program.addCommand(computeCommand());
  program.addCommand(schedulerCommand());
  program.addCommand(serverCommand());
  return program;
}

const VERSION = '0.1.0';

/** Runs the CLI and resolves to the exit code; never throws. */
export async function main(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  program.exitOverride();
  for (const cmd of allCommands(program)) cmd.exitOverride();
  try {
    await program.parseAsync(argv as string[]);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    return reportError(err);
  }
}

function allCommands(cmd: Command): Command[] {
  return cmd.commands.flatMap((c) => [c, ...allCommands(c)]);
}

/** Prints an error as one line (a stack only for our own bugs) and returns the exit code. */
export function reportError(thrown: unknown): number {
  if (thrown instanceof CommanderError) {
    // Commander already printed the message (or the help / version text).
    if (thrown.code === 'commander.helpDisplayed' || thrown.code === 'commander.version') return 0;
    if (thrown.code === 'commander.help') return 0;
    return thrown.exitCode === 0 ? 0 : 2;
  }
  if (thrown instanceof IronringError && thrown.userError) {
    process.stderr.write(`ironring: ${thrown.message}\n`);
    return thrown.exitCode;
  }
  const err = asError(thrown);
  process.stderr.write(`ironring: internal error: ${err.message}\n${err.stack ?? ''}\n`);
  return 70;
}
