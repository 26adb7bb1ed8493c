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
import { jsonlAuditSink, type GatewayAuditSink } from '../gateway/audit.js';
import type { StoreProbe } from '../gateway/health.js';
import type { GatewayReloadResult } from '../gateway/reload.js';
import { gatewayConfigOf } from '../gateway/config.js';
import type { GatewayApprovals } from '../gateway/approvals.js';
import { connectStdio } from '../gateway/fastpath.js';
import { createGateway, type Gateway, type GatewayRequestState } from '../gateway/gateway.js';
import { writtenHere } from '../gateway/lock-file.js';
import { gatewayInbox, type GatewayInbox } from '../gateway/inbox.js';
import type { GatewayHttpServer } from '../gateway/http.js';
import type { GateContext } from '../contracts/gate.js';
import type { PolicySet } from '../policy-file/policy-set.js';
import { loadPolicyForProxy } from '../gateway/policy.js';
import { enforcementText } from '../gateway/reload.js';
import type { CounterStore } from '../stores/types.js';
import { serveOverHttp } from './gateway-http.js';
import { checkAskStores, checkClaims, checkListening, GATEWAY_EXIT, parseGatewayArgs } from './gateway-options.js';
import { openStore } from './serve.js';
import { watchFiles } from './watch-files.js';

export { GATEWAY_EXIT } from './gateway-options.js';

/** Runs the gateway until the client disconnects or a signal stops it; resolves with the exit code. */
export async function runGateway(
  argv: readonly string[],
  io: { readonly stderr: (text: string) => void; readonly stdout?: (text: string) => void } = {
    stderr: (t) => process.stderr.write(t),
  },
): Promise<number> {
  const log = (text: string): void => io.stderr(`toolgate gateway: ${text}\n`);
  const args = parseGatewayArgs(argv, io);
  if (args.exitCode !== undefined) return args.exitCode;
  const options = args.options;

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
    const loopback = checkListening(options);
    const tls =
      options.tlsCert !== undefined
        ? { cert: readFileSync(options.tlsCert), key: readFileSync(options.tlsKey!) }
        : undefined;
    if (options.http !== undefined && !options.auth && !loopback)
      log(
        `WARNING: --no-auth on the non-loopback address ${options.host}: anyone who can reach it calls the upstreams with the gateway's own context`,
      );
    const secretGiven = checkAskStores(options, process.env[options.approvalSecretEnv]);
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
    checkClaims(options);
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
    if (options.http !== undefined)
      http = await serveOverHttp(gateway, options.http, options, {
        tls,
        audit,
        metrics,
        probes,
        approvals,
        reload: (who) => reloadNow(who),
      });
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
    ? watchFiles(options.policy, lockFile, () => void reload('the policy or lock file changed'), log, writtenHere)
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
