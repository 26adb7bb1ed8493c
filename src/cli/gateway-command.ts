/**
 * `toolgate gateway` and `toolgate mcp-proxy` (the gateway with one upstream): registered here, run by
 * gateway.ts / mcp-proxy.ts (loaded with import() only when used, so the other commands never load the
 * MCP SDK). Each parses its own arguments, --help included.
 */
import type { Command } from 'commander';
import type { Cli } from './context.js';

type Runner = (
  argv: readonly string[],
  io: { readonly stderr: (text: string) => void; readonly stdout: (text: string) => void },
) => Promise<number>;

function registerDelegated(program: Command, cli: Cli, name: string, description: string, load: () => Promise<Runner>) {
  program
    .command(name)
    .description(description)
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[args...]')
    .action(async () => {
      const run = await load();
      cli.exit(
        await run(cli.argv.slice(cli.argv.indexOf(name) + 1), {
          stderr: (text) => cli.io.stderr(text),
          stdout: (text) => cli.io.stdout(text),
        }),
      );
    });
}

export function registerGateway(program: Command, cli: Cli): void {
  registerDelegated(
    program,
    cli,
    'gateway',
    'Run the MCP gateway in front of the upstream servers named in the policy file (see toolgate gateway --help).',
    async () => (await import('./gateway.js')).runGateway,
  );
}

export function registerMcpProxy(program: Command, cli: Cli): void {
  registerDelegated(
    program,
    cli,
    'mcp-proxy',
    'Run a policy-enforcing MCP gateway in front of an upstream MCP server (see toolgate mcp-proxy --help).',
    async () => (await import('./mcp-proxy.js')).runMcpProxy,
  );
}
