/**
 * `toolgate gateway`: the MCP gateway over stdio, with the upstreams, resource and prompt rules and
 * pinning stated in the policy file's `gateway:` section.
 *
 *   toolgate gateway --policy FILE [--agent A] [--tenant T] [--scopes s1,s2] [--audit FILE]
 *                    [--http PORT [--host H] [--stateless] (--jwks-url URL --jwt-issuer ISS | --no-auth)
 *                     [--authorization-server URL] [--resource URL] [--approvals-postgres URL]
 *                     [--state-store sqlite:FILE|postgres://…]]
 *                    [--redis URL | --counters-postgres URL]
 *
 * A policy file that does not load, or a gateway section that is wrong, refuses to start (exit 2):
 * enforcement is never switched off by a broken file. Everything it prints goes to stderr (stdout is the
 * MCP channel).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { approversOf } from '../gateway/answers.js';
import { jsonlAuditSink, safeSink, type GatewayAuditSink } from '../gateway/audit.js';
import { isLoopbackAddress } from '../gateway/auth.js';
import { readiness, type StoreProbe } from '../gateway/health.js';
import { adminApi } from '../gateway/admin.js';
import type { GatewayReloadResult } from '../gateway/reload.js';
import { gatewayConfigOf } from '../gateway/config.js';
import type { GatewayApprovals } from '../gateway/approvals.js';
import { connectStdio } from '../gateway/fastpath.js';
import { createGateway, type Gateway, type GatewayRequestState } from '../gateway/gateway.js';
import { gatewayInbox, type GatewayInbox } from '../gateway/inbox.js';
import type { GatewayHttpServer } from '../gateway/http.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { GateContext } from '../contracts/gate.js';
import type { PolicySet } from '../policy-file/policy-set.js';
import { loadPolicyForProxy } from '../gateway/policy.js';
import { enforcementText } from '../gateway/reload.js';
import type { CounterStore } from '../stores/types.js';
import { exitCodes } from './exit-codes.js';
import { openStore } from './serve.js';
import { watchFiles } from './watch-files.js';

/** Exit codes: 0 clean shutdown, 1 the gateway failed, 2 bad usage or configuration. */
export const GATEWAY_EXIT = { OK: 0, FAILED: 1, USAGE: 2 } as const;

interface GatewayCliOptions {
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

/** Runs the gateway until the client disconnects or a signal stops it; resolves with the exit code. */
export async function runGateway(
  argv: readonly string[],
  io: { readonly stderr: (text: string) => void; readonly stdout?: (text: string) => void } = {
    stderr: (t) => process.stderr.write(t),
  },
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
  let options: GatewayCliOptions;
  try {
    program.parse([...argv], { from: 'user' });
    options = program.opts<GatewayCliOptions>();
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? GATEWAY_EXIT.OK : GATEWAY_EXIT.USAGE;
    throw error;
  }

  let gateway: Gateway;
  let contextOf: (policy: PolicySet) => GateContext;
  let lockFile: string | null = null;
  let http: GatewayHttpServer | undefined;
  const closers: (() => Promise<void>)[] = [];
  const probes: StoreProbe[] = [];
  // Set once serving (the admin API's reload is the one SIGHUP does).
  let reloadNow: (who: string) => Promise<GatewayReloadResult> = () =>
    Promise.resolve({ ok: false, version: gateway.policy.version, error: 'the gateway is starting' });
  const closeStores = async (): Promise<void> => {
    await Promise.allSettled(closers.splice(0).map((close) => close()));
  };
  try {
    if (
      options.http === undefined &&
      (options.stateless || options.jwksUrl || !options.auth || options.approvalsPostgres)
    )
      throw new Error('--stateless, --jwks-url, --no-auth and --approvals-postgres apply to --http only');
    const loopback = isLoopbackAddress(options.host);
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
    const tls =
      options.tlsCert !== undefined
        ? { cert: readFileSync(options.tlsCert), key: readFileSync(options.tlsKey!) }
        : undefined;
    if (options.http !== undefined && !options.auth && !loopback)
      log(
        `WARNING: --no-auth on the non-loopback address ${options.host}: anyone who can reach it calls the upstreams with the gateway's own context`,
      );
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
    const secretGiven = process.env[options.approvalSecretEnv];
    if (secretGiven !== undefined && secretGiven.length < 16)
      throw new Error(
        `the environment variable ${options.approvalSecretEnv} must hold the approval HMAC key (16+ characters)`,
      );
    if ((options.approvalsPostgres || options.stateStore) && secretGiven === undefined)
      throw new Error(
        `the environment variable ${options.approvalSecretEnv} must hold the approval HMAC key (16+ characters)`,
      );
    let approvals: GatewayApprovals | undefined;
    let requestState: GatewayRequestState | undefined;
    if (options.approvalsPostgres) {
      const secret = secretGiven!;
      const { PostgresStores } = await import('../stores/postgres.js');
      const stores = new PostgresStores({ connectionString: options.approvalsPostgres });
      await stores.migrate();
      closers.push(() => stores.close());
      approvals = { store: stores.approvals, nonces: stores.nonces, secret };
      requestState = { secret, nonces: stores.nonces, ledger: stores.ledger };
      const approvalStore = stores.approvals;
      probes.push({ name: 'approvals', check: () => approvalStore.get('toolgate-readyz') });
    }
    if (options.stateStore !== undefined) {
      const store = await openStore(options.stateStore);
      closers.push(async () => {
        await store.close();
      });
      if (!store.nonces || !store.ledger)
        throw new Error('--state-store must be sqlite:<file> or postgres://… (a store shared by every replica)');
      requestState = { secret: secretGiven!, nonces: store.nonces, ledger: store.ledger };
      // /readyz: a replica that cannot reach the shared ledger cannot claim a 2026-07-28 retry.
      const ledger = store.ledger;
      probes.push({ name: 'state', check: () => ledger.inspect('toolgate-readyz') });
    }
    const set = await loadPolicyForProxy(options.policy);
    let inbox: GatewayInbox | undefined;
    if (options.inbox !== undefined) {
      const store = await openStore(options.inbox);
      const inboxStore = store.approvals!;
      probes.push({ name: 'inbox', check: () => inboxStore.get('toolgate-readyz') });
      const { createInbox } = await import('../inbox/index.js');
      // This process only waits for answers (the store's watch, else a sweep each second); `toolgate serve`
      // over the same store is where people answer.
      const waiter = createInbox({
        secret: randomBytes(32),
        store: store.approvals!,
        nonces: store.nonces!,
        sweepIntervalMs: 1000,
        ...(set.data.approvals?.timeoutSeconds !== undefined
          ? { ttlMs: set.data.approvals.timeoutSeconds * 1000 }
          : {}),
      });
      closers.push(async () => {
        waiter.close();
        await store.close();
      });
      inbox = gatewayInbox(waiter, options.inboxUrl);
      if (secretGiven !== undefined)
        requestState = { secret: secretGiven, nonces: store.nonces!, ledger: store.ledger! };
    }
    // Only the owner's secret: one replica's in-process nonces and ledger (say so: replicas need --state-store).
    if (requestState === undefined && secretGiven !== undefined && options.http !== undefined) {
      const { MemoryStores } = await import('../stores/memory.js');
      const memory = new MemoryStores();
      requestState = { secret: secretGiven, nonces: memory.nonces, ledger: memory.ledger, processOnly: true };
      log(
        '2026-07-28 retries are claimed in this process only: a requestState is refused after a restart; give replicas one --state-store',
      );
    }
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
    const counters = await openCounters(options, closers);
    if (counters) probes.push({ name: 'counters', check: () => counters.peek('toolgate:readyz', 1000) });
    const config = gatewayConfigOf(set);
    lockFile = config.pins?.file ?? null;
    // Over stdio, a call's line is written just after its answer (audit.ts); over HTTP before it, as it was.
    const after = options.http === undefined ? 'answer' : 'record';
    const fileAudit = options.audit ? jsonlAuditSink(options.audit, { after }) : undefined;
    if (fileAudit) closers.push(() => fileAudit.flush());
    // Over HTTP, /metrics counts what the audit records (after the file has it; a metric never blocks a call).
    const metrics = options.http !== undefined ? (await import('../gateway/metrics.js')).gatewayMetrics() : undefined;
    // With OTEL_EXPORTER_OTLP_ENDPOINT, the decisions also go out as OTLP spans and counters (otlp.ts).
    const otlp = await (await import('./otlp.js')).otlpExport();
    if (otlp) closers.push(() => otlp.close());
    const audit: GatewayAuditSink | undefined =
      metrics || otlp
        ? (record) => {
            try {
              fileAudit?.(record);
            } finally {
              metrics?.observe(record);
              otlp?.sink(record);
            }
          }
        : fileAudit;
    contextOf = (policy) =>
      policy.context({
        ...(options.agent !== undefined ? { agent: options.agent } : {}),
        ...(options.tenant !== undefined ? { tenant: options.tenant } : {}),
        ...(options.scopes ? { scopes: options.scopes } : {}),
      });
    const context = contextOf(set);
    gateway = await createGateway({
      policy: set,
      upstreams: config.upstreams,
      pins: config.pins,
      context,
      ...(counters ? { counters } : {}),
      ...(audit ? { audit } : {}),
      ...(options.allowUnrecordedShadow ? { allowUnrecordedShadow: true } : {}),
      ...(approvals ? { approvals } : {}),
      ...(inbox ? { inbox } : {}),
      ...(requestState ? { requestState } : {}),
      reloadGuard: { widen: options.reload === 'widen=allow' ? 'allow' : 'hold' },
    });
    metrics?.bind(gateway);
    if (options.http !== undefined) {
      const { serveGatewayHttp } = await import('../gateway/http.js');
      const { jwtAuthenticator } = await import('../gateway/auth.js');
      const { requestContext, tenantOf } = await import('../gateway/tenancy.js');
      const tenancy = {
        ...(options.tenantClaim !== undefined ? { tenantClaim: options.tenantClaim } : {}),
        ...(options.agentClaim !== undefined ? { agentClaim: options.agentClaim } : {}),
      };
      // Who may answer /approvals: the policy in force's approvers, for the gateway's tenant — or, with
      // --tenant-claim, the approver token's own tenant (a token naming none acts for no tenant).
      const approversFor = (auth: AuthInfo) => {
        if (options.tenantClaim === undefined) return approversOf(gateway.policy, gateway.context.tenant?.id);
        try {
          return approversOf(gateway.policy, tenantOf(gateway.policy, auth, options.tenantClaim));
        } catch {
          return { ...approversOf(gateway.policy, undefined), tenants: [] };
        }
      };
      http = await serveGatewayHttp(gateway, {
        port: options.http,
        host: options.host,
        allowNonLoopback: true,
        ...(options.allowedHost ? { allowedHosts: options.allowedHost } : {}),
        ...(options.trustedProxy ? { trustedProxies: options.trustedProxy } : {}),
        ...(tls ? { tls } : {}),
        ...(audit ? { audit: safeSink(audit) } : {}),
        readiness: readiness(gateway, probes),
        ...(metrics ? { metrics: () => metrics.scrape() } : {}),
        ...(options.adminScope !== undefined
          ? {
              admin: adminApi({
                scope: options.adminScope,
                gateway,
                lockFile: () => gatewayConfigOf(gateway.policy).pins?.file ?? null,
                reload: (who) => reloadNow(who),
                audit: safeSink(audit),
              }),
            }
          : {}),
        authenticate: options.auth
          ? jwtAuthenticator({
              jwksUrl: options.jwksUrl!,
              ...(options.jwtIssuer ? { issuer: options.jwtIssuer } : {}),
              ...(options.jwtAllowNoExp ? { allowNoExp: true } : {}),
            })
          : null,
        ...(options.stateless ? { stateless: true } : {}),
        ...(options.resource ? { resource: options.resource } : {}),
        ...(options.authorizationServer ? { authorizationServers: options.authorizationServer } : {}),
        // RFC 9728 `scopes_supported`: the policy in force's scope map (a reload changes it).
        scopesSupported: () => Object.keys(gateway.policy.scopes),
        // Who may answer: the policy in force's approvers and the tenant (THE approver check).
        ...(approvals ? { approvals: { store: approvals.store, approvers: approversFor } } : {}),
        // The agent a route /mcp/<agent> names, unless the gateway serves one agent (--agent).
        ...(options.agent === undefined && options.auth ? { routeAgents: true } : {}),
        // The policy in force now: a reload changes what the scopes cover, and the tenants' plans.
        context: (auth, route) => requestContext(gateway.policy, auth, route, tenancy, {}),
      }).catch(async (error: unknown) => {
        await gateway.close();
        throw error;
      });
    }
  } catch (error) {
    await closeStores();
    log(`refusing to start: ${error instanceof Error ? error.message : String(error)}`);
    return GATEWAY_EXIT.USAGE;
  }
  for (const upstream of gateway.upstreams.values())
    log(
      `upstream ${upstream.namespace}: ${upstream.state}${upstream.state === 'ready' ? '' : ` (${upstream.reason})`}`,
    );
  log(enforcementText(gateway.policy));
  if (http)
    log(
      `listening on ${http.url.href}${options.auth ? ` (protected resource metadata: ${http.resourceMetadataUrl.href})` : ' without authentication'}`,
    );

  // Reloading: SIGHUP, and a change of the policy file or its lock file (unless --no-watch). A policy
  // that does not load keeps the one in force; both are audit records (Gateway.reload).
  const reload = (why: string): Promise<GatewayReloadResult> =>
    gateway
      .reload(options.policy, { context: contextOf, pins: (policy) => gatewayConfigOf(policy).pins })
      .then((result) => {
        log(
          result.ok
            ? `${why}: policy ${result.version} in force${result.changes.length > 0 ? ` (${result.changes.join('; ')})` : ', nothing changed'}; ${enforcementText(gateway.policy)}`
            : result.held
              ? `${why}: ${result.error} (approval ${result.approval})`
              : `${why}: the new policy was refused; policy ${result.version} stays in force: ${result.error}`,
        );
        return result;
      });
  reloadNow = (who) => reload(`reload by ${who} (admin API)`);
  const onHangup = (): void => void reload('SIGHUP');
  process.on('SIGHUP', onHangup);
  const watcher = options.watch
    ? watchFiles(options.policy, lockFile, () => void reload('the policy or lock file changed'), log)
    : null;
  const stopWatching = async (): Promise<void> => {
    process.off('SIGHUP', onHangup);
    watcher?.close();
    await closeStores();
  };

  return serveUntilStopped(gateway, http, log, stopWatching);
}

/** How long a stopping gateway waits for the calls running to finish (SIGTERM: a container's stop grace is 30 s). */
const DRAIN_GRACE_MS = 20_000;

/** A repeatable option's values. */
function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/**
 * The counter store of `--redis URL` or `--counters-postgres URL` (the policy's `limits:` counted across
 * replicas), or undefined for in-process counters; its closing is pushed on `closers`.
 */
export async function openCounters(
  options: { readonly redis?: string | undefined; readonly countersPostgres?: string | undefined },
  closers: (() => Promise<void>)[],
): Promise<CounterStore | undefined> {
  if (options.redis !== undefined && options.countersPostgres !== undefined)
    throw new Error('--redis and --counters-postgres exclude each other: give one place where limits count');
  if (options.redis !== undefined) {
    const { RedisStores } = await import('../stores/redis.js');
    const stores = new RedisStores({ url: options.redis });
    closers.push(() => stores.close());
    return stores.counters;
  }
  if (options.countersPostgres !== undefined) {
    const { PostgresStores } = await import('../stores/postgres.js');
    const stores = new PostgresStores({ connectionString: options.countersPostgres });
    closers.push(() => stores.close());
    await stores.migrate();
    return stores.counters;
  }
  return undefined;
}

/**
 * Serves `gateway` (over `http`, else over stdio) until the client disconnects, a signal stops it, or
 * `stopWhen` calls its `stop`; then closes everything (and `closeAlso`) and resolves with the exit code.
 * `toolgate gateway` and `toolgate mcp-proxy` both end here.
 */
export function serveUntilStopped(
  gateway: Gateway,
  http: GatewayHttpServer | undefined,
  log: (text: string) => void,
  closeAlso?: () => Promise<void>,
  stopWhen?: (stop: (code: number, why: string) => void) => void,
): Promise<number> {
  return new Promise<number>((resolveExit) => {
    let done = false;
    const shutdown = (code: number, why: string): void => {
      if (done) return;
      done = true;
      log(why);
      // Over HTTP the calls running finish first (new ones are refused), for at most DRAIN_GRACE_MS; a
      // short grace period then lets an error result already on its way reach the client.
      const drained = http
        ? Promise.race([http.drain(), new Promise((resolve) => setTimeout(resolve, DRAIN_GRACE_MS).unref())])
        : Promise.resolve();
      void drained.then(() =>
        setTimeout(() => {
          void Promise.allSettled([http?.close(), gateway.close(), closeAlso?.()]).then(() => {
            process.off('SIGINT', interrupted).off('SIGTERM', terminated);
            resolveExit(code);
          });
        }, 100),
      );
    };
    // A signal while stopping is taken, not left to kill the process: the calls running are stopped and recorded
    // by the close, and held audit lines written (SIGKILL is the way to force it).
    const interrupted = (): void => shutdown(GATEWAY_EXIT.OK, 'interrupted');
    const terminated = (): void => shutdown(GATEWAY_EXIT.OK, 'terminated');
    process.on('SIGINT', interrupted).on('SIGTERM', terminated);
    stopWhen?.(shutdown);
    if (http) return;
    const server = gateway.createServer();
    process.stdin.once('end', () => shutdown(GATEWAY_EXIT.OK, 'the client closed the connection'));
    server.onclose = () => shutdown(GATEWAY_EXIT.OK, 'the client closed the connection');
    // The fast path (gateway/fastpath.ts) takes the common requests before the SDK Server parses them.
    connectStdio(server).catch((error: unknown) =>
      shutdown(GATEWAY_EXIT.FAILED, `stdio transport failed: ${String(error)}`),
    );
  });
}
