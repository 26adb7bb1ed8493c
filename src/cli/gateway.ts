/**
 * `toolgate gateway`: the MCP gateway over stdio, with the upstreams, resource and prompt rules and
 * pinning stated in the policy file's `gateway:` section.
 *
 *   toolgate gateway --policy FILE [--agent A] [--tenant T] [--scopes s1,s2] [--audit FILE]
 *
 * A policy file that does not load, or a gateway section that is wrong, refuses to start (exit 2):
 * enforcement is never switched off by a broken file. Everything it prints goes to stderr (stdout is the
 * MCP channel).
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { Command, CommanderError } from 'commander';
import { jsonlAuditSink, type GatewayAuditSink } from '../gateway/audit.js';
import { gatewayConfigOf } from '../gateway/config.js';
import { createGateway, type Gateway } from '../gateway/gateway.js';
import { loadPolicyForProxy } from '../adapters/mcp/proxy-policy.js';

/** Exit codes: 0 clean shutdown, 1 the gateway failed, 2 bad usage or configuration. */
export const GATEWAY_EXIT = { OK: 0, FAILED: 1, USAGE: 2 } as const;

interface GatewayCliOptions {
  policy: string;
  agent?: string;
  tenant?: string;
  scopes?: string[];
  audit?: string;
}

/** Runs the gateway until the client disconnects or a signal stops it; resolves with the exit code. */
export async function runGateway(
  argv: readonly string[],
  io: { readonly stderr: (text: string) => void } = { stderr: (t) => process.stderr.write(t) },
): Promise<number> {
  const log = (text: string): void => io.stderr(`toolgate gateway: ${text}\n`);
  const program = new Command('toolgate gateway')
    .description('A policy-enforcing MCP gateway in front of the upstream servers named in the policy file')
    .requiredOption('--policy <file>', 'the toolgate policy file (YAML or JSON) with a gateway: section')
    .option('--agent <name>', 'an agent declared in the policy file (default: every upstream tool)')
    .option('--tenant <id>', 'a tenant declared in the policy file')
    .option('--scopes <scopes>', "the caller's scopes (comma- or space-separated)", (v: string) =>
      v.split(/[\s,]+/).filter(Boolean),
    )
    .option('--audit <file>', 'append every audit record to this JSONL file')
    .exitOverride()
    .configureOutput({ writeOut: io.stderr, writeErr: io.stderr });
  let options: GatewayCliOptions;
  try {
    program.parse([...argv], { from: 'user' });
    options = program.opts<GatewayCliOptions>();
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? GATEWAY_EXIT.OK : GATEWAY_EXIT.USAGE;
    throw error;
  }

  let gateway: Gateway;
  try {
    const set = await loadPolicyForProxy(options.policy);
    const config = gatewayConfigOf(set);
    const audit: GatewayAuditSink | undefined = options.audit ? jsonlAuditSink(options.audit) : undefined;
    const context = set.context({
      ...(options.agent !== undefined ? { agent: options.agent } : {}),
      ...(options.tenant !== undefined ? { tenant: options.tenant } : {}),
      ...(options.scopes ? { scopes: options.scopes } : {}),
    });
    gateway = await createGateway({
      policy: set,
      upstreams: config.upstreams,
      pins: config.pins,
      context,
      ...(audit ? { audit } : {}),
    });
  } catch (error) {
    log(`refusing to start: ${error instanceof Error ? error.message : String(error)}`);
    return GATEWAY_EXIT.USAGE;
  }
  for (const upstream of gateway.upstreams.values())
    log(
      `upstream ${upstream.namespace}: ${upstream.state}${upstream.state === 'ready' ? '' : ` (${upstream.reason})`}`,
    );

  return new Promise<number>((resolveExit) => {
    let done = false;
    const shutdown = (code: number, why: string): void => {
      if (done) return;
      done = true;
      log(why);
      void gateway.close().then(() => resolveExit(code));
    };
    process.once('SIGINT', () => shutdown(GATEWAY_EXIT.OK, 'interrupted'));
    process.once('SIGTERM', () => shutdown(GATEWAY_EXIT.OK, 'terminated'));
    const server = gateway.createServer();
    process.stdin.once('end', () => shutdown(GATEWAY_EXIT.OK, 'the client closed the connection'));
    server.onclose = () => shutdown(GATEWAY_EXIT.OK, 'the client closed the connection');
    server
      .connect(new StdioServerTransport())
      .catch((error: unknown) => shutdown(GATEWAY_EXIT.FAILED, `stdio transport failed: ${String(error)}`));
  });
}
