#!/usr/bin/env node
/**
 * `toolgate mcp-proxy` (also the `toolgate-mcp-proxy` bin): `toolgate gateway` with one upstream, the
 * command after `--`, its tools under their own names; over stdio or Streamable HTTP on loopback. Its own
 * flags (the token keys, `--jwt-audience`, `--call-timeout`, `--trusted`) are mapped onto the gateway;
 * what runs is the gateway's code (src/gateway/), served by `serveUntilStopped` as `toolgate gateway` is.
 *
 *   toolgate-mcp-proxy --policy FILE [--agent A] [--tenant T] [--scopes s1,s2] [--http PORT]
 *                      [--jwt-public-key FILE | --jwt-jwk FILE | --jwt-secret-file FILE | --jwks-url URL]
 *                      [--jwt-audience AUD | --jwt-any-audience]
 *                      [--audit FILE] [--call-timeout MS] [--redis URL | --counters-postgres URL]
 *                      -- <upstream command> [args…]
 *
 * FILE is a toolgate policy file (YAML or JSON): its rules (resource and prompt rules and shadow mode
 * too), agents, tenants and scope map apply, and its `tools:` metadata and parameter schemas apply to the
 * upstream's tools; a `gateway:` section is refused (that is `toolgate gateway`'s). Everything it prints
 * goes to stderr: in stdio mode stdout is the MCP channel.
 */
import { appendFileSync, readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { isLoopbackAddress, jwtAuthenticator, type BearerAuthenticator } from '../gateway/auth.js';
import { jsonlAuditSink } from '../gateway/audit.js';
import { enforcementText } from '../gateway/reload.js';
import { createGateway, type Gateway } from '../gateway/gateway.js';
import type { GatewayHttpServer } from '../gateway/http.js';
import { loadPolicyForProxy, policyToolMetadata, policyToolParameters } from '../gateway/policy.js';
import { PROXY_UPSTREAM } from '../gateway/proxy.js';
import type { GateContext } from '../contracts/gate.js';
import type { PolicySet } from '../policy-file/policy-set.js';
import { exitCodes } from './exit-codes.js';
import { openCounters, serveUntilStopped } from './gateway.js';

interface Options {
  policy: string;
  agent?: string;
  tenant?: string;
  scopes?: string[];
  http?: number;
  host: string;
  jwtPublicKey?: string;
  jwtJwk?: string;
  jwtSecretFile?: string;
  jwksUrl?: string;
  jwtIssuer?: string;
  jwtAudience?: string;
  jwtAnyAudience?: boolean;
  jwtAllowNoExp?: boolean;
  audit?: string;
  callTimeout?: number;
  approvalTimeout?: number;
  trusted?: boolean;
  redis?: string;
  countersPostgres?: string;
  allowUnrecordedShadow?: boolean;
}

/** Exit codes: 0 clean shutdown, 1 the upstream failed, 2 bad usage or configuration. */
export const EXIT = { OK: 0, UPSTREAM: 1, USAGE: 2 } as const;

/**
 * Runs the gateway until it shuts down; resolves with the exit code. `argv` is the arguments after the
 * command name (so the main `toolgate` CLI can hand over `mcp-proxy …` as is).
 */
export async function runMcpProxy(
  argv: readonly string[],
  io: { readonly stderr: (text: string) => void; readonly stdout?: (text: string) => void } = {
    stderr: (t) => process.stderr.write(t),
  },
): Promise<number> {
  const log = (text: string): void => io.stderr(`toolgate mcp-proxy: ${text}\n`);
  const program = new Command('toolgate mcp-proxy')
    .description('A policy-enforcing MCP gateway in front of an upstream MCP server')
    .requiredOption('--policy <file>', 'the toolgate policy file (YAML or JSON)')
    .option('--agent <name>', 'an agent declared in the policy file (default: one that declares every upstream tool)')
    .option('--tenant <id>', 'a tenant declared in the policy file (default: no tenant layer)')
    .option(
      '--scopes <scopes>',
      "the caller's scopes, mapped to tools by the file's scope map (comma- or space-separated); stdio only",
      list,
    )
    .option('--http <port>', 'serve Streamable HTTP on this port instead of stdio', integer)
    .option('--host <host>', 'the loopback address to listen on with --http', '127.0.0.1')
    .option('--jwt-public-key <file>', 'verify bearer JWTs with this PEM public key')
    .option('--jwt-jwk <file>', 'verify bearer JWTs with this JWK (JSON file)')
    .option('--jwt-secret-file <file>', 'verify HS256 bearer JWTs with the secret in this file')
    .option('--jwks-url <url>', 'verify bearer JWTs against this JWKS URL')
    .option('--jwt-issuer <iss>', 'require this issuer')
    .option('--jwt-audience <aud>', 'require this audience (the `aud` claim); --http needs it')
    .option('--jwt-any-audience', 'accept tokens minted for any audience (not recommended; printed as a warning)')
    .option('--jwt-allow-no-exp', 'accept bearer tokens without an exp claim (valid forever; not recommended)')
    .option('--audit <file>', 'append every decision to this JSONL file')
    .option(
      '--allow-unrecorded-shadow',
      'serve a policy with shadow rules (or mode: shadow) without --audit (refused otherwise: nothing would record them)',
    )
    .option('--call-timeout <ms>', 'how long an upstream call may take', integer)
    .option('--approval-timeout <ms>', 'how long the user has to answer an approval prompt', integer)
    .option('--trusted', "believe the upstream server's tool annotations")
    .option('--redis <url>', "count the policy's limits: in Redis at this URL (shared by every replica)")
    .option(
      '--counters-postgres <url>',
      "count the policy's limits: in the PostgreSQL stores at this URL (shared by every replica)",
    )
    .argument('<command...>', 'the upstream MCP server command (after --)')
    .exitOverride()
    // --help goes to stdout (it is asked for; nothing is served then); errors and logs to stderr.
    .configureOutput({ writeOut: io.stdout ?? ((t) => process.stdout.write(t)), writeErr: io.stderr });
  exitCodes(program, [
    [EXIT.OK, 'clean shutdown: the client disconnected, or SIGINT / SIGTERM'],
    [EXIT.UPSTREAM, 'the upstream MCP server could not start or exited'],
    [EXIT.USAGE, 'usage error: a bad option, an unreadable or refused policy file, bad token settings'],
  ]);

  let options: Options;
  let command: string[];
  try {
    program.parse([...argv], { from: 'user' });
    options = program.opts<Options>();
    command = program.args;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    throw error;
  }

  let context: GateContext;
  let authenticate: BearerAuthenticator | undefined;
  let audit: ReturnType<typeof jsonlAuditSink> | undefined;
  let policyFile: PolicySet;
  try {
    policyFile = await loadPolicyForProxy(options.policy);
    if (policyFile.data.gateway !== undefined)
      throw new Error(
        `the policy file has a gateway: section; toolgate mcp-proxy takes its one upstream from the command line (after --). Run \`toolgate gateway --policy ${options.policy}\` to serve the upstreams it names`,
      );
    context = policyFile.context({
      ...(options.agent !== undefined ? { agent: options.agent } : {}),
      ...(options.tenant !== undefined ? { tenant: options.tenant } : {}),
      ...(options.scopes ? { scopes: options.scopes } : {}),
    });
    if (options.http !== undefined) {
      if (options.scopes)
        throw new Error('--scopes applies to stdio only: over HTTP the scopes come from the bearer token');
      // Checked before the upstream is spawned: a refused configuration starts nothing.
      if (!isLoopbackAddress(options.host))
        throw new Error(
          `--host must be a loopback address (127.0.0.1, ::1, localhost), got ${JSON.stringify(options.host)}: the gateway does not listen beyond this machine`,
        );
      if (options.jwtAudience !== undefined && options.jwtAnyAudience)
        throw new Error('give either --jwt-audience or --jwt-any-audience, not both');
      if (options.jwtAudience === undefined && !options.jwtAnyAudience)
        throw new Error(
          '--http needs --jwt-audience <aud> (the audience tokens must be minted for), or --jwt-any-audience to accept tokens minted for any service',
        );
      if (options.jwtAnyAudience)
        log(
          'WARNING: --jwt-any-audience: the audience of bearer tokens is NOT checked; a token minted for any other service signed by the same key is accepted',
        );
      authenticate = authenticatorFrom(options);
    } else if (
      options.jwtPublicKey ||
      options.jwtJwk ||
      options.jwtSecretFile ||
      options.jwksUrl ||
      options.jwtAudience !== undefined ||
      options.jwtAnyAudience
    ) {
      throw new Error('the --jwt-*/--jwks-url options apply to --http only');
    }
    if (options.audit) {
      appendFileSync(options.audit, ''); // fail now, not at the first call, if the file cannot be written
      audit = jsonlAuditSink(options.audit);
    }
  } catch (error) {
    log(error instanceof Error ? error.message : String(error));
    return EXIT.USAGE;
  }

  const metadata = policyToolMetadata(policyFile);
  const parameters = policyToolParameters(policyFile);
  let gateway: Gateway;
  const closers: (() => Promise<void>)[] = [];
  // The audit file's lines still being written are in it before the process exits.
  const fileAudit = audit;
  if (fileAudit) closers.push(() => fileAudit.flush());
  const closeStores = async (): Promise<void> => {
    await Promise.allSettled(closers.splice(0).map((close) => close()));
  };
  try {
    const counters = await openCounters(options, closers);
    gateway = await createGateway({
      policy: policyFile,
      upstreams: {
        [PROXY_UPSTREAM]: {
          stdio: { command: command[0]!, args: command.slice(1), stderr: 'inherit' },
          prefix: false,
          ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
          ...(Object.keys(parameters).length > 0 ? { parameters } : {}),
          ...(options.trusted ? { trusted: true } : {}),
          ...(options.callTimeout !== undefined ? { callTimeoutMs: options.callTimeout } : {}),
        },
      },
      pins: null,
      context,
      ...(counters ? { counters } : {}),
      name: 'toolgate-mcp-proxy',
      ...(audit ? { audit } : {}),
      ...(options.allowUnrecordedShadow ? { allowUnrecordedShadow: true } : {}),
      ...(options.approvalTimeout !== undefined ? { approvalTimeoutMs: options.approvalTimeout } : {}),
    });
  } catch (error) {
    await closeStores();
    log(`could not start: ${error instanceof Error ? error.message : String(error)}`);
    return EXIT.USAGE;
  }
  const upstream = gateway.upstreams.get(PROXY_UPSTREAM)!;
  if (upstream.state !== 'ready') {
    await gateway.close();
    await closeStores();
    log(`could not start the upstream server ${JSON.stringify(command.join(' '))}: ${upstream.reason}`);
    return EXIT.UPSTREAM;
  }

  log(enforcementText(gateway.policy));
  let http: GatewayHttpServer | undefined;
  if (options.http !== undefined) {
    const { serveGatewayHttp } = await import('../gateway/http.js');
    try {
      http = await serveGatewayHttp(gateway, {
        port: options.http,
        host: options.host,
        authenticate: authenticate!,
        // The authenticator checks the audience (--jwt-audience); --jwt-any-audience checks none.
        audience: options.jwtAudience ?? false,
        // RFC 9728 `scopes_supported`: the capability scopes of the policy file's scope map.
        scopesSupported: Object.keys(policyFile.scopes),
        // The token's scopes are capability scopes, mapped to tool names by the policy file's scope map;
        // the caller layer they give narrows the proxy's agent and tenant layers.
        context: (auth) => ({ caller: { id: auth.clientId, scopes: policyFile.toolsForScopes(auth.scopes) } }),
      });
    } catch (error) {
      await gateway.close();
      await closeStores();
      log(
        `cannot listen on ${options.host}:${options.http}: ${error instanceof Error ? error.message : String(error)}`,
      );
      return EXIT.USAGE;
    }
    log(`listening on ${http.url.href}`);
  }
  // The upstream exiting ends the proxy (the gateway would reconnect it; one upstream is all this serves).
  return serveUntilStopped(gateway, http, log, closeStores, (stop) =>
    gateway.onUpstreamState((u) => {
      if (u.state === 'down') stop(EXIT.UPSTREAM, `the upstream MCP server exited; shutting down (${u.reason})`);
    }),
  );
}

function authenticatorFrom(options: Options): BearerAuthenticator {
  const common = {
    ...(options.jwtIssuer ? { issuer: options.jwtIssuer } : {}),
    ...(options.jwtAudience ? { audience: options.jwtAudience } : {}),
    ...(options.jwtAllowNoExp ? { allowNoExp: true } : {}),
  };
  if (options.jwtPublicKey)
    return jwtAuthenticator({ publicKey: readFileSync(options.jwtPublicKey, 'utf8'), ...common });
  if (options.jwtJwk)
    return jwtAuthenticator({ jwk: JSON.parse(readFileSync(options.jwtJwk, 'utf8')) as object, ...common });
  if (options.jwtSecretFile)
    return jwtAuthenticator({
      secret: readFileSync(options.jwtSecretFile, 'utf8').trim(),
      algorithms: ['HS256'],
      ...common,
    });
  if (options.jwksUrl) return jwtAuthenticator({ jwksUrl: options.jwksUrl, ...common });
  throw new Error(
    '--http needs a way to verify bearer tokens: --jwt-public-key, --jwt-jwk, --jwt-secret-file or --jwks-url',
  );
}

function list(value: string): string[] {
  return value.split(/[\s,]+/).filter(Boolean);
}

function integer(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new InvalidArgumentError(`expected a non-negative integer, got ${JSON.stringify(value)}`);
  return n;
}

function isMain(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) {
  runMcpProxy(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(
        `toolgate mcp-proxy: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exit(EXIT.USAGE);
    },
  );
}
