/**
 * The MCP gateway: many upstream servers behind one MCP server per client connection. This file composes
 * it, starts it and closes it; the jobs are each in their own file — router.ts (which upstream serves
 * what), session.ts (one handler per MCP method, each deciding through the gate), relay.ts (notifications,
 * subscriptions, fan-out), reload.ts (the one frozen policy in force and its swap), pins.ts (pinned tool
 * definitions), approvers.ts (who answers an ask), upstream.ts (one connection each).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { McpHttpHandler } from '@modelcontextprotocol/server';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { GateContext } from '../contracts/gate.js';
import { describe } from '../names.js';
import type { PolicySet } from '../policy-file/policy-set.js';
import { ToolRegistry } from '../registry.js';
import { MemoryCounterStore, MemoryLedger } from '../stores/memory.js';
import type { CounterStore, Ledger, NonceStore } from '../stores/types.js';
import { secretOf } from '../crypto.js';
import { checkApprovals, type GatewayApprovals } from './approvals.js';
import { safeSink, type GatewayAuditSink } from './audit.js';
import { checkContext } from './context.js';
import { checkInbox, type GatewayInbox } from './inbox.js';
import { allowFastPath } from './fastpath.js';
import { ItemGate } from './items.js';
import type { GatewayReloadGuard } from './reload-guard.js';
import { Relay } from './relay.js';
import {
  buildInForce,
  isPolicySet,
  Reloader,
  type GatewayPinOptions,
  type GatewayReloadOptions,
  type GatewayReloadResult,
} from './reload.js';
import { Router } from './router.js';
import { modernFastHandler } from './modern-fast.js';
import type { MrtrStores } from './mrtr.js';
import { openSession, type GatewayCore, type GatewayRequestContext } from './session.js';
import { sharedAcrossTenants } from './tenancy.js';
import { Upstream, type GatewayUpstreamOptions, type UpstreamEvents } from './upstream.js';

export type { GatewayPinOptions, GatewayReloadOptions, GatewayReloadResult } from './reload.js';
export type { GatewayReloadGuard } from './reload-guard.js';
export type { GatewayRequestContext } from './session.js';
export { elicitationApprover } from './approvers.js';

/** Options of {@link createGateway}. */
export interface GatewayOptions {
  /** The upstream servers by namespace (`github` shows `search` as `github:search`). */
  readonly upstreams: Readonly<Record<string, GatewayUpstreamOptions>>;
  /** The loaded policy file: tool rules, resource and prompt rules, agents, tenants, scopes, shadow mode. */
  readonly policy: PolicySet;
  /** Who is asking, for servers created without their own context (over HTTP, the token narrows it). @default the policy file's default context */
  readonly context?: GateContext;
  /** Pin tool definitions in a lock file; null turns pinning off. @default null */
  readonly pins?: GatewayPinOptions | null;
  /**
   * Where the policy file's `limits:` are counted: share one store (Redis, PostgreSQL) between replicas so
   * that a limit holds across them. @default in-process counters (one gateway process)
   */
  readonly counters?: CounterStore;
  /** Receives every audit record. @default none */
  readonly audit?: GatewayAuditSink;
  /**
   * Serve a policy with shadow rules (or `mode: shadow`) although no `audit` sink records what they would
   * have done. Without it such a policy is refused at start and at reload: shadow rules switch enforcement
   * off for what they cover, and unrecorded they are enforcement silently off. @default false
   */
  readonly allowUnrecordedShadow?: boolean;
  /** How long a person has to answer an approval (elicitation) before the call is denied. @default 120_000 */
  readonly approvalTimeoutMs?: number;
  /** The gateway's server name towards its clients. @default 'toolgate-gateway' */
  readonly name?: string;
  /**
   * Put asks in the shared stores instead of asking by elicitation: a call asked on one replica can be
   * answered on another and runs once (see approvals.ts). @default none: asks go to the client by elicitation
   */
  readonly approvals?: GatewayApprovals;
  /**
   * Put asks in the approval inbox and wait for a person's answer there (`gatewayInbox(createInbox(…))`):
   * the client is told where (URL elicitation, else progress); the call runs once on allow. Not with
   * `approvals`. @default none
   */
  readonly inbox?: GatewayInbox;
  /**
   * What a 2026-07-28 client's approval (`input_required` and its retry, mrtr.ts) is signed under and
   * claimed in: the owner's secret (the same on every replica, so any replica verifies another's state)
   * and the nonces and ledger every replica shares (a retry runs once across them). @default with
   * `approvals`: its secret and nonces and an in-process ledger; without: none, and an ask of a 2026-07-28
   * client is refused (never signed by a key of this process alone)
   */
  readonly requestState?: GatewayRequestState;
  /**
   * Every reload is diffed against the policy in force (`diffPolicies`). One that widens access is held for
   * a person's approval in `inbox` (`widen: 'hold'`), or takes effect with the diff in its audit record
   * (`widen: 'allow'`, the CLI's `--reload widen=allow`, and always without an inbox). A reload that does
   * not widen takes effect at once. @default { widen: 'hold' }
   */
  readonly reloadGuard?: GatewayReloadGuard;
}

/** See {@link GatewayOptions.requestState}. */
export interface GatewayRequestState {
  /** The HMAC key of the states (at least 16 bytes; `approvals.secret` when both are given). */
  readonly secret: string | Uint8Array;
  /** Single-use nonces, shared by every replica. */
  readonly nonces: NonceStore;
  /** The execution ledger, shared by every replica: a claimed retry runs once, and its outcome is kept. */
  readonly ledger: Ledger;
  /** How long a person has to answer. @default 900_000 (15 minutes) */
  readonly ttlMs?: number;
  /**
   * The nonces and ledger live in this process only (not a durable single-use store): each state is bound
   * to this process's boot (a random id in the signed state) and refused after a restart, since whether
   * its call ran is gone with the process. @default false
   */
  readonly processOnly?: boolean;
}

/** A running gateway. */
export interface Gateway {
  /** The registry holding every upstream's tools (namespaced), with the policy in force. */
  readonly registry: ToolRegistry;
  /** The gateway's own context (agent, tenant, caller layers); a server's context function only narrows it over HTTP. */
  readonly context: GateContext;
  /** The policy file in force (the last one {@link Gateway.reload} swapped in, else the one it started with). */
  readonly policy: PolicySet;
  /**
   * Swaps in a new policy file, atomically: its tool, resource and prompt rules, shadow rules, agents and
   * the gateway's context take effect for every call decided from now on (a call waiting for a person is
   * decided again before it runs). A policy that does not load or compile keeps the one in force and is
   * reported (`{ ok: false }`, an audit `mode` record with event `refused`); every change of enforcement
   * is an audit `mode` record naming it. Upstreams and tool metadata take effect at the next start (the
   * record says so when they changed). `policy` is a loaded PolicySet or a policy file to read.
   */
  reload(policy: PolicySet | string, options?: GatewayReloadOptions): Promise<GatewayReloadResult>;
  /** The upstreams by namespace: their state (`ready`, `down` with a reason) and connection. */
  readonly upstreams: ReadonlyMap<string, Upstream>;
  /** A new downstream MCP server (one per client connection or HTTP session); connect it to a transport. */
  createServer(options?: { readonly context?: GatewayRequestContext }): Server;
  /**
   * The web-standard handler of 2026-07-28 requests (stateless: a fresh server per request, with the same
   * handlers as {@link Gateway.createServer}'s). `serveGatewayHttp` routes them to it on the one listener.
   */
  modernHandler(options?: {
    readonly context?: GatewayRequestContext;
    /**
     * The URL of the Protected Resource Metadata (RFC 9728), named in a step-up's `WWW-Authenticate`
     * (`resource_metadata`) so a client finds the authorization server to ask for more scopes. @default none
     */
    readonly resourceMetadata?: () => string | undefined;
  }): McpHttpHandler;
  /** Subscribes to upstream state changes; returns the unsubscribe function. */
  onUpstreamState(listener: (upstream: Upstream) => void): () => void;
  /** Closes every downstream server and every upstream (stdio upstreams are stopped). */
  close(): Promise<void>;
}

const NAMESPACE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/**
 * Starts a gateway: connects every upstream (one that fails is `down` and retried; the others serve),
 * registers their tools under their namespaces, pins their definitions when `pins` is given.
 *
 * @example
 * const set = await loadPolicyFile('policy.yaml');
 * const gateway = await createGateway({
 *   policy: set,
 *   upstreams: { fs: { stdio: { command: 'mcp-server-filesystem', args: ['/srv'] } } },
 *   pins: { file: 'policy.lock.json' },
 * });
 * await gateway.createServer().connect(new StdioServerTransport());
 */
export async function createGateway(options: GatewayOptions): Promise<Gateway> {
  checkOptions(options);
  const audit = safeSink(options.audit);
  const upstreams = new Map<string, Upstream>();
  const router = new Router(upstreams);
  const relay = new Relay(upstreams);
  const callTimeout = Math.max(...Object.values(options.upstreams).map((u) => u.callTimeoutMs ?? 60_000), 1000);
  const registry = new ToolRegistry({
    toolTimeoutMs: callTimeout + 1000,
    handlerTimeoutMs: options.approvalTimeoutMs ?? 120_000,
  });
  const requestState = requestStateOf(options);
  const people = {
    approvals: options.approvals,
    // The key the gateway's routes bind approval requests under (a route's owner sets it): the shared
    // stores' secret with `approvals`, else the requestState's; with neither, requests are answered within
    // this gateway's own request (elicitation, the inbox's waiter) and a key of this instance binds them.
    secret:
      options.approvals !== undefined
        ? checkApprovals(options.approvals).secret
        : (requestState?.secret ?? randomBytes(32)),
    requestState,
    inbox: options.inbox,
    approvalTimeoutMs: options.approvalTimeoutMs ?? 120_000,
  };
  const items = new ItemGate(
    { toolTimeoutMs: callTimeout + 1000, handlerTimeoutMs: options.approvalTimeoutMs ?? 120_000 },
    people,
    audit,
  );
  const inputs = {
    upstreams: options.upstreams,
    counters: options.counters ?? new MemoryCounterStore(),
    audit,
    recorded: options.audit !== undefined,
    allowUnrecordedShadow: options.allowUnrecordedShadow === true,
  };
  const first = buildInForce(
    options.policy,
    options.context ?? options.policy.context(),
    options.pins ?? null,
    inputs,
    null,
  );
  // A held reload is asked in the inbox under the key the gateway's routes bind their approvals under.
  const guard = {
    settings: options.reloadGuard ?? { widen: 'hold' as const },
    inbox: options.inbox,
    secret: people.secret,
  };
  const inForce = new Reloader(
    first,
    { registry, items, router, relay, contextOption: options.context, guard },
    inputs,
  );
  relay.sharedAcrossTenants = (upstream) => sharedAcrossTenants(inForce.current.set, upstream.namespace);
  const core: GatewayCore = {
    name: options.name ?? 'toolgate-gateway',
    registry,
    router,
    relay,
    inForce,
    items,
    people,
    audit,
  };

  const stateListeners = new Set<(upstream: Upstream) => void>();
  const events: UpstreamEvents = {
    stateChanged(upstream) {
      const time = new Date().toISOString();
      if (upstream.state === 'ready') {
        inForce.noteTools(upstream);
        audit({ type: 'upstream', time, upstream: upstream.namespace, state: 'ready' });
        relay.listsChanged();
      } else if (upstream.state === 'down') {
        audit({ type: 'upstream', time, upstream: upstream.namespace, state: 'down', reason: upstream.reason });
      }
      for (const listener of stateListeners) listener(upstream);
    },
    toolsChanged(upstream) {
      inForce.noteTools(upstream);
      relay.listsChanged(['tools']);
    },
    resourcesChanged: () => relay.listsChanged(['resources']),
    promptsChanged: () => relay.listsChanged(['prompts']),
    resourceUpdated: (upstream, uri) => relay.resourceUpdated(upstream, uri),
    log: (upstream, params) => relay.log(upstream, params),
  };
  for (const [namespace, upstreamOptions] of Object.entries(options.upstreams))
    upstreams.set(namespace, new Upstream(namespace, upstreamOptions, registry, events));
  await Promise.all([...upstreams.values()].map((u) => u.start()));

  let closed = false;
  const modern = new Set<McpHttpHandler>();
  return {
    registry,
    get context() {
      return inForce.current.context;
    },
    get policy() {
      return inForce.current.set;
    },
    reload: (source, reloadOptions) => inForce.reload(source, reloadOptions),
    upstreams,
    createServer(serverOptions = {}) {
      const own = serverOptions.context;
      if (own !== undefined) checkContext(own);
      // Read per request: a reload changes the gateway's own context for the servers already connected.
      const contextOption = () => own ?? inForce.current.context;
      const server = openSession(core, contextOption);
      allowFastPath(server, core, contextOption);
      return server;
    },
    modernHandler(handlerOptions = {}) {
      const own = handlerOptions.context;
      if (own !== undefined) checkContext(own);
      // What the SDK's entry refuses before any handler runs (headers against the body, versions, `_meta`)
      // is audited: nothing was decided, nothing ran.
      const handler = modernFastHandler(
        core,
        () => own ?? inForce.current.context,
        (error) => audit({ type: 'protocol', time: new Date().toISOString(), reason: error.message }),
        handlerOptions.resourceMetadata,
      );
      modern.add(handler);
      return handler;
    },
    onUpstreamState(listener) {
      stateListeners.add(listener);
      return () => stateListeners.delete(listener);
    },
    async close() {
      if (closed) return;
      closed = true;
      inForce.close();
      await Promise.allSettled([...modern].map((h) => h.close()));
      await relay.close();
      await Promise.allSettled([...upstreams.values()].map((u) => u.close()));
      inForce.current.pins?.store.flush(); // a drift write pending (DRIFT_WRITE_MS) is on disk once closed
    },
  };
}

/** The requestState's secret and stores, checked (a TypeError naming the option), or undefined. */
function requestStateOf(options: GatewayOptions): MrtrStores | undefined {
  const given = options.requestState;
  if (given === undefined) {
    if (options.approvals === undefined) return undefined;
    const { secret, ttlMs } = checkApprovals(options.approvals);
    return { secret, nonces: options.approvals.nonces, ledger: new MemoryLedger(), ttlMs };
  }
  if (typeof given !== 'object' || given === null)
    throw new TypeError(`option "requestState" must be an object, got ${describe(given)}`);
  const secret = secretOf(given.secret, 'option "requestState.secret"');
  if (typeof (given.nonces as { consume?: unknown } | undefined)?.consume !== 'function')
    throw new TypeError(`option "requestState.nonces" must be a NonceStore, got ${describe(given.nonces)}`);
  for (const method of ['reserve', 'record', 'release'] as const)
    if (typeof (given.ledger as unknown as Record<string, unknown> | undefined)?.[method] !== 'function')
      throw new TypeError(
        `option "requestState.ledger" must be a Ledger (with ${method}()), got ${describe(given.ledger)}`,
      );
  const ttlMs = given.ttlMs ?? 900_000;
  if (!Number.isInteger(ttlMs) || ttlMs <= 0)
    throw new TypeError(`option "requestState.ttlMs" must be a positive integer, got ${describe(ttlMs)}`);
  if (options.approvals !== undefined) {
    const other = checkApprovals(options.approvals).secret;
    if (Buffer.compare(Buffer.from(other), Buffer.from(secret)) !== 0)
      throw new TypeError('options "approvals.secret" and "requestState.secret" must be the same key');
  }
  if (given.processOnly !== undefined && typeof given.processOnly !== 'boolean')
    throw new TypeError(`option "requestState.processOnly" must be a boolean, got ${describe(given.processOnly)}`);
  return {
    secret,
    nonces: given.nonces,
    ledger: given.ledger,
    ttlMs,
    ...(given.processOnly === true ? { boot: randomUUID() } : {}),
  };
}

/** Refuses options that cannot make a gateway, with a TypeError naming the option and what it got. */
/** The longest `callTimeoutMs` (the policy schema's maximum too): 2^31 - 1 ms, Node's longest timer, less the 1 s added for the tool. */
const MAX_CALL_TIMEOUT_MS = 2 ** 31 - 1 - 1000;

function checkOptions(options: GatewayOptions): void {
  if (typeof options !== 'object' || options === null)
    throw new TypeError(`createGateway options must be an object, got ${describe(options)}`);
  if (!isPolicySet(options.policy))
    throw new TypeError(`option "policy" must be a loaded policy file (a PolicySet), got ${describe(options.policy)}`);
  const guard = options.reloadGuard;
  if (guard !== undefined && (typeof guard !== 'object' || guard === null || !['hold', 'allow'].includes(guard.widen)))
    throw new TypeError(`option "reloadGuard" must be { widen: 'hold' | 'allow' }, got ${describe(guard)}`);
  if (typeof options.upstreams !== 'object' || options.upstreams === null)
    throw new TypeError(`option "upstreams" must be an object keyed by namespace, got ${describe(options.upstreams)}`);
  for (const [namespace, upstream] of Object.entries(options.upstreams)) {
    if (!NAMESPACE.test(namespace))
      throw new TypeError(
        `upstream namespace ${JSON.stringify(namespace)} must be 1-64 letters, digits, "_", "." or "-" (no ":")`,
      );
    const sources = (['stdio', 'url', 'transport'] as const).filter((k) => upstream?.[k] !== undefined);
    if (sources.length !== 1)
      throw new TypeError(
        `upstream ${JSON.stringify(namespace)} needs exactly one of "stdio", "url", "transport"; got ${sources.length === 0 ? 'none' : sources.join(', ')}`,
      );
    // Node's timers take at most 2^31 - 1 ms (a longer one fires after 1 ms); a call's tool timeout is 1 s more.
    for (const [key, max] of [
      ['callTimeoutMs', MAX_CALL_TIMEOUT_MS],
      ['connectTimeoutMs', MAX_CALL_TIMEOUT_MS + 1000],
    ] as const) {
      const ms = upstream[key];
      if (ms !== undefined && !(Number.isInteger(ms) && ms >= 1 && ms <= max))
        throw new TypeError(
          `upstream ${JSON.stringify(namespace)}: "${key}" must be an integer from 1 to ${max}, got ${describe(ms)}`,
        );
    }
  }
  if (options.counters !== undefined && typeof (options.counters as { consume?: unknown })?.consume !== 'function')
    throw new TypeError(`option "counters" must be a CounterStore (with consume()), got ${describe(options.counters)}`);
  if (options.allowUnrecordedShadow !== undefined && typeof options.allowUnrecordedShadow !== 'boolean')
    throw new TypeError(
      `option "allowUnrecordedShadow" must be a boolean, got ${describe(options.allowUnrecordedShadow)}`,
    );
  if (options.approvals !== undefined) checkApprovals(options.approvals);
  requestStateOf(options);
  if (options.inbox !== undefined) {
    checkInbox(options.inbox);
    if (options.approvals !== undefined)
      throw new TypeError('options "approvals" and "inbox" exclude each other: give one place where asks wait');
  }
}
