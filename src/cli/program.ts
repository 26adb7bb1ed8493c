/**
 * The `toolgate` command. Each command lives in its own file and registers itself with one line below;
 * exit codes are in exit-codes.ts (shared by every command, listed in each command's --help).
 */
import { Command, CommanderError } from 'commander';
import { isToolgateError } from '../errors.js';
import { registerAudit } from './audit.js';
import { registerCheck } from './check.js';
import { UsageError, type Cli, type CliIO, type RegisterCommand } from './context.js';
import { registerDemo } from './demo.js';
import { registerDiff } from './diff.js';
import { EXIT, exitCodesText, USAGE_LINE } from './exit-codes.js';
import { registerExplain } from './explain.js';
import { registerGateway, registerMcpProxy } from './gateway-command.js';
import { registerLedger } from './ledger.js';
import { registerLint } from './lint.js';
import { registerPin } from './pin.js';
import { registerReport } from './report.js';
import { registerTest } from './test.js';
import { registerServe } from './serve.js';
import { colors } from './render.js';
import { registerWatch } from './watch.js';

export type { Cli, CliIO, RegisterCommand } from './context.js';
export { EXIT } from './exit-codes.js';
export { runDemo } from './demo.js';

/** The commands, in the order `toolgate --help` lists them: one line each. */
const COMMANDS: readonly RegisterCommand[] = [
  registerExplain,
  registerLint,
  registerDiff,
  registerCheck,
  registerWatch,
  registerMcpProxy,
  registerGateway,
  registerPin,
  registerTest,
  registerReport,
  registerServe,
  registerAudit,
  registerLedger,
  registerDemo,
];

const PROGRAM_EXIT_CODES = exitCodesText([
  [EXIT.OK, 'success (explain: the call is allowed; lint: no errors)'],
  [EXIT.POLICY, 'the policy file was refused, or lint found errors'],
  USAGE_LINE,
  [EXIT.DENIED, 'explain: the call is denied (check: with --fail-on deny)'],
  [EXIT.ASK, 'explain: the call needs approval (check: with --fail-on ask)'],
]);

/**
 * Runs the command line `argv` (without `node` and the script) and resolves with the exit code. Never
 * calls process.exit, so tests can run it in-process.
 */
export async function run(argv: readonly string[], io: CliIO): Promise<number> {
  const c = colors(io.color === true);
  let code: number = EXIT.OK;
  const cli: Cli = {
    io,
    c,
    argv,
    out: (text) => io.stdout(text.endsWith('\n') ? text : `${text}\n`),
    err: (text) => io.stderr(text.endsWith('\n') ? text : `${text}\n`),
    exit: (n) => {
      code = n;
    },
  };

  const program = new Command('toolgate')
    .description('Decide, explain and lint AI-agent tool-call permissions from a toolgate policy file.')
    .addHelpText('after', `${PROGRAM_EXIT_CODES}\n\nEach command's --help lists its own exit codes.`)
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout(s),
      writeErr: (s) => io.stderr(s),
      outputError: (s, write) => write(c.red(s)),
    });
  for (const register of COMMANDS) register(program, cli);

  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      if (
        error.code === 'commander.helpDisplayed' ||
        error.code === 'commander.help' ||
        error.code === 'commander.version'
      )
        return EXIT.OK;
      return error.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    }
    if (error instanceof UsageError || isToolgateError(error)) {
      cli.err(`${c.red('error')} ${(error as Error).message}`);
      return EXIT.USAGE;
    }
    cli.err(`${c.red('error')} ${error instanceof Error ? error.message : String(error)}`);
    return EXIT.USAGE;
  }
  return code;
}
