/** `toolgate watch`: load a policy file and reload it on every change. */
import type { Command } from 'commander';
import { watchPolicyFile } from '../policy-file/watch.js';
import type { Cli } from './context.js';
import { EXIT, exitCodes, USAGE_LINE } from './exit-codes.js';
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
    [EXIT.OK, 'interrupted after the policy file loaded'],
    [EXIT.POLICY, 'the policy file was refused at start'],
    USAGE_LINE,
  ]).action(async (options: { policy: string; json?: boolean }) => {
    const stamp = (): string => new Date().toISOString();
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
        const event = { event: 'rejected', time: stamp(), file: options.policy, kept: kept?.version ?? null, issues };
        if (options.json) cli.out(JSON.stringify(event));
        else
          cli.out(
            `${c.red('rejected')} ${options.policy}: ${kept ? `keeping policy ${kept.version}` : 'no policy in force'}\n${issuesText(issues, c)}`,
          );
      },
    });
    const first = await watch.ready;
    if (!first) cli.exit(EXIT.POLICY);
    await (cli.io.stop ?? new Promise<void>(() => {}));
    watch.close();
  });
}
