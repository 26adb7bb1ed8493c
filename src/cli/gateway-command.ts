/**
 * `toolgate gateway`: registered here, run by gateway.ts (loaded with import() only when used, so the
 * other commands never load the MCP SDK). The gateway parses its own arguments, --help included.
 */
import type { Command } from 'commander';
import type { Cli } from './context.js';

export function registerGateway(program: Command, cli: Cli): void {
  program
    .command('gateway')
    .description(
      'Run the MCP gateway in front of the upstream servers named in the policy file (see toolgate gateway --help).',
    )
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[args...]')
    .action(async () => {
      const { runGateway } = await import('./gateway.js');
      cli.exit(
        await runGateway(cli.argv.slice(cli.argv.indexOf('gateway') + 1), {
          stderr: (text) => cli.io.stderr(text),
          stdout: (text) => cli.io.stdout(text),
        }),
      );
    });
}
