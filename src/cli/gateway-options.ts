/**
 * `toolgate gateway`'s command line: its options (commander), their help and exit codes, read into one
 * `GatewayCliOptions`; and what the options mean together (which exclude each other, which need --http):
 * checkListening, checkAskStores and checkClaims, which gateway.ts calls in the order it opens what they name.
 */
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { isLoopbackAddress } from '../gateway/auth.js';
import { exitCodes } from './exit-codes.js';

/** Exit codes: 0 clean shutdown, 1 the gateway failed, 2 bad usage or configuration. */
export const GATEWAY_EXIT = { OK: 0, FAILED: 1, USAGE: 2 } as const;

export interface GatewayCliOptions {
  policy: string;
  agent?: string;
  tenant?: string;
  scopes?: string[];
  audit?: string;
  http?: number;
  host: string;
  allowedHost?: string[];
  trustedProxy?: string[];
  tlsCert?: string;
  tlsKey?: string;
  stateless?: boolean;
  tenantClaim?: string;
  agentClaim?: string;
  adminScope?: string;
  jwksUrl?: string;
  jwtIssuer?: string;
  jwtAllowNoExp?: boolean;
  auth: boolean;
  authorizationServer?: string[];
  resource?: string;
  approvalsPostgres?: string;
  redis?: string;
  countersPostgres?: string;
  approvalSecretEnv: string;
  watch: boolean;
  inbox?: string;
  inboxUrl?: string;
  stateStore?: string;
  reload: string;
  allowUnrecordedShadow?: boolean;
}

/** The options read, or the exit code when there is nothing to run (--help, a bad option: commander said why). */
export type GatewayArgs =
  | { readonly options: GatewayCliOptions; readonly exitCode?: never }
  | { readonly exitCode: number; readonly options?: never };

/** Reads `toolgate gateway`'s arguments; --help goes to `io.stdout` (else stdout), errors to `io.stderr`. */
export function parseGatewayArgs(
  argv: readonly string[],
  io: { readonly stderr: (text: string) => void; readonly stdout?: (text: string) => void },
): GatewayArgs {
  const program = new Command('toolgate gateway')
    .description('A policy-enforcing MCP gateway in front of the upstream servers named in the policy file')
    .requiredOption('--policy <file>', 'the toolgate policy file (YAML or JSON) with a gateway: section')
    .option('--agent <name>', 'an agent declared in the policy file (default: every upstream tool)')
    .option('--tenant <id>', 'a tenant declared in the policy file')
    .option('--scopes <scopes>', "the caller's scopes (comma- or space-separated)", (v: string) =>
      v.split(/[\s,]+/).filter(Boolean),
    )
    .option('--audit <file>', 'append every audit record to this JSONL file')
    .option(
      '--allow-unrecorded-shadow',
      'serve a policy with shadow rules (or mode: shadow) without --audit (refused otherwise: nothing would record them)',
    )
    .option('--no-watch', 'do not reload when the policy or lock file changes (SIGHUP still reloads)')
    .option('--http <port>', 'serve Streamable HTTP on this port instead of stdio', (v: string) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0 || n > 65535)
        throw new InvalidArgumentError(`expected a port, got ${JSON.stringify(v)}`);
      return n;
    })
    .option(
      '--host <address>',
      'the address to listen on with --http (0.0.0.0 for every interface; a non-loopback one needs authentication or --no-auth)',
      '127.0.0.1',
    )
    .option(
      '--allowed-host <host>',
      "a Host (name, or name:port) requests may name besides the public URL's (DNS-rebinding allow-list); repeatable",
      collect,
    )
    .option(
      '--trusted-proxy <address>',
      'a proxy (by its address) whose X-Forwarded-Host / X-Forwarded-For are believed; repeatable',
      collect,
    )
    .option('--tls-cert <file>', 'serve HTTPS with this PEM certificate (with --tls-key)')
    .option('--tls-key <file>', 'the PEM private key of --tls-cert')
    .option('--stateless', 'no sessions: any replica serves any request (with --http)')
    .option(
      '--tenant-claim <claim>',
      "many tenants on one gateway: each request's tenant is this claim of its verified token (declared in the policy's tenants:)",
    )
    .option(
      '--admin-scope <scope>',
      'serve the admin API under /admin/ (upstreams, pins, accept a pin, reload, drain) to tokens with this scope (needs --jwks-url)',
    )
    .option(
      '--agent-claim <claim>',
      "each request's agent is this claim of its verified token (default: the route /mcp/<agent>, else --agent)",
    )
    .option('--jwks-url <url>', 'verify bearer JWTs against this JWKS URL (with --http)')
    .option('--jwt-issuer <iss>', 'require this token issuer')
    .option('--jwt-allow-no-exp', 'accept bearer tokens without an exp claim (valid forever; not recommended)')
    .option('--no-auth', 'serve --http without authentication (on a non-loopback --host: with a warning)')
    .option(
      '--authorization-server <url>',
      'an OAuth authorization server for the protected resource metadata; repeatable',
      collect,
    )
    .option('--resource <url>', 'the resource URL clients use (token audience; default: the listening URL)')
    .option(
      '--approvals-postgres <url>',
      'put asks in the PostgreSQL stores at this URL (answered at /approvals on any replica)',
    )
    .option('--redis <url>', "count the policy's limits: in Redis at this URL (shared by every replica)")
    .option(
      '--counters-postgres <url>',
      "count the policy's limits: in the PostgreSQL stores at this URL (shared by every replica)",
    )
    .option(
      '--inbox <store>',
      'put asks in the approval inbox at this store (sqlite:<file> or postgres://…, the one `toolgate serve --store` answers from); the call waits for the answer',
    )
    .option('--inbox-url <url>', "the inbox's address told to the client (toolgate serve's URL)")
    .option(
      '--state-store <store>',
      "where 2026-07-28 retries are claimed once across replicas (sqlite:<file> or postgres://…: its nonces and ledger); needs the approval secret's variable",
    )
    .option(
      '--reload <rule>',
      'widen=hold: a reload that widens access waits for approval in the inbox; widen=allow: it takes effect (audited with its diff)',
      'widen=hold',
    )
    .option(
      '--approval-secret-env <name>',
      'the environment variable holding the approval HMAC key',
      'TOOLGATE_APPROVAL_SECRET',
    )
    .exitOverride()
    // --help goes to stdout (it is asked for; nothing is served then); errors and logs to stderr.
    .configureOutput({ writeOut: io.stdout ?? ((t) => process.stdout.write(t)), writeErr: io.stderr });
  exitCodes(program, [
    [GATEWAY_EXIT.OK, 'clean shutdown: the client disconnected, or SIGINT / SIGTERM'],
    [GATEWAY_EXIT.FAILED, 'the gateway failed (the stdio transport closed in error)'],
    [
      GATEWAY_EXIT.USAGE,
      'usage or configuration error: a bad option, a policy file that does not load (the gateway refuses to start)',
    ],
  ]);
  try {
    program.parse([...argv], { from: 'user' });
    return { options: program.opts<GatewayCliOptions>() };
  } catch (error) {
    if (error instanceof CommanderError)
      return { exitCode: error.exitCode === 0 ? GATEWAY_EXIT.OK : GATEWAY_EXIT.USAGE };
    throw error;
  }
}

/**
 * Where and how it listens: the options that apply to --http only, authentication on a non-loopback
 * address, TLS's two halves. Returns whether --host is a loopback address. Throws an Error naming the options.
 */
export function checkListening(options: GatewayCliOptions): boolean {
  const loopback = isLoopbackAddress(options.host);
  if (
    options.http === undefined &&
    (options.stateless || options.jwksUrl || !options.auth || options.approvalsPostgres)
  )
    throw new Error('--stateless, --jwks-url, --no-auth and --approvals-postgres apply to --http only');
  if (options.http !== undefined && options.auth && !options.jwksUrl)
    throw new Error(
      loopback
        ? '--http needs --jwks-url (bearer JWTs) or --no-auth'
        : `--host ${options.host} is not a loopback address: serving it without authentication is refused; give --jwks-url (bearer JWTs), or --no-auth to serve anyone who can reach it`,
    );
  if (
    options.http === undefined &&
    (options.allowedHost || options.trustedProxy || options.tlsCert || options.tlsKey || options.host !== '127.0.0.1')
  )
    throw new Error('--host, --allowed-host, --trusted-proxy, --tls-cert and --tls-key apply to --http only');
  if ((options.tlsCert === undefined) !== (options.tlsKey === undefined))
    throw new Error('--tls-cert and --tls-key go together: give both');
  return loopback;
}

/**
 * Where asks wait and retries are claimed (--inbox, --approvals-postgres, --state-store, --reload) and the
 * approval key they need (`secretGiven`, the variable --approval-secret-env names). Returns that key.
 */
export function checkAskStores(options: GatewayCliOptions, secretGiven: string | undefined): string | undefined {
  if (options.inbox !== undefined && options.approvalsPostgres !== undefined)
    throw new Error('--inbox and --approvals-postgres exclude each other: give one place where asks wait');
  if (options.inboxUrl !== undefined && options.inbox === undefined) throw new Error('--inbox-url needs --inbox');
  if (options.reload !== 'widen=hold' && options.reload !== 'widen=allow')
    throw new Error(`--reload must be widen=hold or widen=allow, got ${JSON.stringify(options.reload)}`);
  if (options.inbox === 'memory')
    throw new Error('--inbox memory cannot be answered from toolgate serve: give sqlite:<file> or postgres://…');
  if (options.stateStore !== undefined && options.http === undefined)
    throw new Error('--state-store applies to --http only');
  if (options.stateStore !== undefined && (options.approvalsPostgres !== undefined || options.inbox !== undefined))
    throw new Error('--state-store is for a gateway without --approvals-postgres or --inbox (their store is used)');
  // The owner's approval key: the stores' with --approvals-postgres, the 2026-07-28 requestStates' always
  // (the same on every replica; never a key of this process alone).
  if (secretGiven !== undefined && secretGiven.length < 16)
    throw new Error(
      `the environment variable ${options.approvalSecretEnv} must hold the approval HMAC key (16+ characters)`,
    );
  if ((options.approvalsPostgres || options.stateStore) && secretGiven === undefined)
    throw new Error(
      `the environment variable ${options.approvalSecretEnv} must hold the approval HMAC key (16+ characters)`,
    );
  return secretGiven;
}

/** Who a request acts for: the token claims (--tenant-claim, --agent-claim, --admin-scope) against the fixed ones. */
export function checkClaims(options: GatewayCliOptions): void {
  if ((options.tenantClaim !== undefined || options.agentClaim !== undefined) && !options.jwksUrl)
    throw new Error('--tenant-claim and --agent-claim read verified tokens: they need --http with --jwks-url');
  if (options.adminScope !== undefined && !options.jwksUrl)
    throw new Error('--admin-scope needs --http with --jwks-url: admin calls are made with verified tokens');
  if (options.tenantClaim !== undefined && options.tenant !== undefined)
    throw new Error('--tenant and --tenant-claim exclude each other: one tenant for the gateway, or one per token');
  if (options.agentClaim !== undefined && options.agent !== undefined)
    throw new Error('--agent and --agent-claim exclude each other: one agent for the gateway, or one per token');
  if (options.scopes && options.http !== undefined)
    throw new Error('--scopes applies to stdio only: over HTTP the scopes come from the bearer token');
}

/** A repeatable option's values. */
function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
