/** `toolgate watch`: load a policy file and reload it on every change. */
import type { Command } from 'commander';
import { watchPolicyFile } from '../policy-file/watch.js';
import type { PolicyIssue } from '../policy-file/types.js';
import { refusedExit, type Cli } from './context.js';
import { EXIT, exitCodes } from './exit-codes.js';
import { issuesText } from './render.js';

export function registerWatch(program: Command, cli: Cli): void {
  const { c } = cli;
  const command = program
    .command('watch')
    .description(
      'Load a policy file and reload it on every change; a reload that fails keeps the policy in force and says why.',
    )
    .requiredOption('-p, --policy <file>', 'the policy file')
    .option('--json', 'print one JSON object per event')
    .addHelpText('after', `\nRuns until interrupted (^C).`);
  exitCodes(command, [
    [EXIT.OK, 'interrupted (^C, SIGTERM); the policy file had loaded at start'],
    [EXIT.POLICY, 'interrupted; the policy file was refused at start'],
    [EXIT.USAGE, 'usage error: a bad option, or the policy file could not be read at start'],
  ]).action(async (options: { policy: string; json?: boolean }) => {
    // Listen for ^C before anything is printed, so an interrupt right after "loaded" is not missed.
    const stop = cli.io.stop ?? interrupted();
    const stamp = (): string => new Date().toISOString();
    let firstIssues: readonly PolicyIssue[] | null = null;
    const watch = watchPolicyFile(options.policy, {
      onLoad: (set, previous) => {
        const event = {
          event: previous ? 'reloaded' : 'loaded',
          time: stamp(),
          file: options.policy,
          version: set.version,
          rules: set.rules.length,
          tools: set.tools.length,
          agents: set.agents.size,
          tenants: set.tenants.size,
        };
        cli.out(
          options.json
            ? JSON.stringify(event)
            : `${c.green(event.event)} ${options.policy}: policy ${set.version} (${set.rules.length} rules, ${set.tools.length} tools, ${set.agents.size} agents, ${set.tenants.size} tenants)`,
        );
      },
      onError: (issues, kept) => {
        firstIssues ??= issues;
        const event = { event: 'rejected', time: stamp(), file: options.policy, kept: kept?.version ?? null, issues };
        if (options.json) cli.out(JSON.stringify(event));
        else
          cli.out(
            `${c.red('rejected')} ${options.policy}: ${kept ? `keeping policy ${kept.version}` : 'no policy in force'}\n${issuesText(issues, c)}`,
          );
      },
    });
    const first = await watch.ready;
    if (!first) cli.exit(firstIssues === null ? EXIT.POLICY : refusedExit(firstIssues));
    await stop;
    watch.close();
  });
}

/** Resolves at ^C or SIGTERM (listened to only while watching, so other commands keep the default). */
function interrupted(): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      resolve();
    };
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
  });
}
