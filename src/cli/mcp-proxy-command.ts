/**
 * `toolgate mcp-proxy`: registered here, run by mcp-proxy.ts (loaded with import() only when used, so
 * the other commands never load the MCP SDK). The gateway parses its own arguments, --help included.
 */
import type { Command } from 'commander';
import type { Cli } from './context.js';

export function registerMcpProxy(program: Command, cli: Cli): void {
  program
    .command('mcp-proxy')
    .description(
      'Run a policy-enforcing MCP gateway in front of an upstream MCP server (see toolgate mcp-proxy --help).',
    )
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[args...]')
    .action(async () => {
      const { runMcpProxy } = await import('./mcp-proxy.js');
      cli.exit(
        await runMcpProxy(cli.argv.slice(cli.argv.indexOf('mcp-proxy') + 1), {
          stderr: (text) => cli.io.stderr(text),
          stdout: (text) => cli.io.stdout(text),
        }),
      );
    });
}
