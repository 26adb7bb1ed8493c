/**
 * The runner's options, validated once at construction (a TypeError names the option and the value it
 * got), and the per-run and per-dispatch inputs it reads later: run() options and tenant limits.
 */
import { randomUUID } from 'node:crypto';
import { randomKey, secretOf } from '../crypto.js';
import { parseScopeMap, parseTenantLimits, stringList, type ScopeMap } from '../config.js';
import { ConfigurationError } from '../errors.js';
import { describe } from '../names.js';
import { isPermissionHandler } from '../permissions/handler.js';
import { isRegistry } from '../gate/index.js';
import type { ToolRegistry } from '../registry.js';
import type { RunCaps, Stores } from '../stores/types.js';
import {
  MemoryApprovalStore,
  MemoryLedger,
  MemoryNonceStore,
  MemoryRememberStore,
  MemoryTallyStore,
  memoryStores,
} from '../stores/memory.js';
import { RunLedger } from './ledger.js';
import type { ApprovalHandler, Model, RunIdentity, RunOptions, TenantLimits, TenantProvider } from './types.js';

/** Options of {@link AgentRunner}. */
export interface AgentRunnerOptions {
  /** The tools, the permission policy and the handlers; read at every dispatch. */
  readonly registry: ToolRegistry;
  readonly model: Model;
  /** Tenant limits by tenant id: a provider called at every dispatch, or a record read at every dispatch. @default every tenant states nothing */
  readonly tenants?: TenantProvider | Readonly<Record<string, TenantLimits>>;
  /**
   * Where the runner keeps what outlives one runner instance (`toolgate/stores`): paused runs with their
   * approvals (`approvals`), used approval nonces, remembered answers, the ledger of executed calls and run
   * tallies. Each may come from another server: the README's split takes `nonces` from `RedisStores` and the
   * rest from `PostgresStores`. Every process that resumes a run needs the same stores. @default memoryStores()
   */
  readonly stores?: RunnerStores;
  /** The 0.1 name of `stores` (then `new InMemoryApprovalStore()` / `new SqliteApprovalStore(…)`); give one of the two. */
  readonly approvals?: RunnerStores;
  /**
   * How long this runner's ledger reservation of a call it executes is `held` (another worker resuming the
   * same run waits for its outcome meanwhile) before it reads as `unknown` (never run again). @default 600_000 (10 min)
   */
  readonly leaseMs?: number;
  /**
   * The HMAC key approvals and run states are signed with (at least 16 bytes); every process that resumes a
   * run needs the same one. Required when any of `stores` is not in-process memory (SQLite, PostgreSQL,
   * Redis, your own): read it from your secret store, e.g. `secret: process.env.TOOLGATE_SECRET`. On
   * in-process memory stores it may be left out. @default one random key per memory store set (runners sharing one `memoryStores()` agree)
   */
  readonly secret?: string | Uint8Array;
  /** How long a pending approval can be answered (its binding's expiry). @default 86_400_000 (24 h) */
  readonly approvalTtlMs?: number;
  /** Asked when a rule answers `ask`, after the policy's own handler and before the registry's; may answer `pending`. @default none */
  readonly handler?: ApprovalHandler;
  /** What an allowlist refusal does: fail the run, or answer the model with an error result. @default 'fail' */
  readonly onRefusal?: 'fail' | 'continue';
  /**
   * Capability scopes to tool names (a policy file's `set.scopes` fits). Given, the caller's scopes are
   * mapped through it and a scope it does not map covers nothing, as in policy files. @default absent: the caller's scopes are tool names
   */
  readonly scopes?: ScopeMap;
  /** The cost a call to a tool (canonical name) charges against `maxCost`. @default () => 1 */
  readonly costOf?: (tool: string) => number;
  /** The same refused call (agent, canonical tool, arguments) this many times ends the run as `refusal_loop`. @default 3 */
  readonly refusalLoopLimit?: number;
  /** How deep delegation may nest (the root agent is depth 0); a delegation past it is refused at stage `depth`. @default 4 */
  readonly maxDepth?: number;
  /** Model turns per run when the tenant sets no `maxIterations`. @default 25 */
  readonly maxIterations?: number;
}

/** The stores an AgentRunner uses: {@link Stores} without the counters (limits are the registry's). */
export type RunnerStores = Pick<Stores, 'approvals' | 'nonces' | 'remembered' | 'ledger' | 'tallies'>;

/** The options, validated and with their defaults. */
export interface RunnerSettings {
  readonly registry: ToolRegistry;
  readonly model: Model;
  readonly tenants: TenantProvider;
  readonly stores: RunnerStores;
  /** The ledger as the run uses it (this runner's owner id and lease). */
  readonly ledger: RunLedger;
  readonly approvalTtlMs: number;
  readonly secret: Uint8Array;
  readonly handler: ApprovalHandler | null;
  readonly onRefusal: 'fail' | 'continue';
  /** Null: the caller's scopes are tool names. */
  readonly scopes: ScopeMap | null;
  readonly costOf: (tool: string) => number;
  readonly loopLimit: number;
  readonly maxDepth: number;
  readonly maxIterations: number;
}

/** A tenant's limits for one dispatch. */
export interface Limits extends RunCaps {
  readonly tools: readonly string[] | null;
}

export function runnerSettings(options: AgentRunnerOptions): RunnerSettings {
  if (typeof options !== 'object' || options === null)
    throw new TypeError(`AgentRunner expects an options object, got ${describe(options)}`);
  if (!isRegistry(options.registry))
    throw new TypeError(`AgentRunner option "registry" must be a ToolRegistry, got ${describe(options.registry)}`);
  if (typeof options.model !== 'object' || options.model === null || typeof options.model.generate !== 'function')
    throw new TypeError(
      `AgentRunner option "model" must have a generate(request) method, got ${describe(options.model)}`,
    );
  // Each read once: a getter answering differently later cannot make stores given here read as the runner's own.
  const givenStores = options.stores;
  const givenApprovals = options.approvals;
  if (givenStores !== undefined && givenApprovals !== undefined)
    throw new TypeError('AgentRunner takes "stores" or its 0.1 name "approvals", not both');
  const storesOption = givenStores === undefined && givenApprovals !== undefined ? 'approvals' : 'stores';
  const stores = storesOf(givenStores ?? givenApprovals, givenStores === undefined ? 'approvals' : 'stores');
  if (options.handler !== undefined && !isPermissionHandler(options.handler))
    throw new TypeError(
      `AgentRunner option "handler" must be a function or an object with handle(request), got ${describe(options.handler)}`,
    );
  const onRefusal = options.onRefusal ?? 'fail';
  if (onRefusal !== 'fail' && onRefusal !== 'continue')
    throw new TypeError(`AgentRunner option "onRefusal" must be 'fail' or 'continue', got ${describe(onRefusal)}`);
  if (options.costOf !== undefined && typeof options.costOf !== 'function')
    throw new TypeError(`AgentRunner option "costOf" must be a function, got ${describe(options.costOf)}`);
  return {
    registry: options.registry,
    model: options.model,
    tenants: tenantProvider(options.tenants),
    stores,
    ledger: new RunLedger(stores.ledger, randomUUID(), count(options.leaseMs, 'leaseMs', 600_000, 1)),
    approvalTtlMs: count(options.approvalTtlMs, 'approvalTtlMs', 86_400_000, 1),
    secret: runnerSecret(
      options.secret,
      stores,
      storesOption,
      givenStores === undefined && givenApprovals === undefined,
    ),
    handler: options.handler ?? null,
    onRefusal,
    scopes: options.scopes === undefined ? null : parseScopeMap(options.scopes, 'AgentRunner option "scopes"'),
    costOf: options.costOf ?? (() => 1),
    loopLimit: count(options.refusalLoopLimit, 'refusalLoopLimit', 3, 1),
    maxDepth: count(options.maxDepth, 'maxDepth', 4, 0),
    maxIterations: count(options.maxIterations, 'maxIterations', 25, 1),
  };
}

/** The identity of a new run from run()'s options (everything but the agents, the root and the input). */
export function runIdentity(options: RunOptions): Pick<RunIdentity, 'runId' | 'tenant' | 'caller' | 'session'> {
  if (typeof options !== 'object' || options === null)
    throw new TypeError(`run(): options must be an object, got ${describe(options)}`);
  const tenant = options.tenant ?? 'default';
  if (typeof tenant !== 'string' || tenant === '')
    throw new TypeError(`run() option "tenant" must be a non-empty string, got ${describe(tenant)}`);
  const caller = options.caller ?? {};
  if (typeof caller !== 'object' || caller === null)
    throw new TypeError(`run() option "caller" must be an object, got ${describe(caller)}`);
  if (caller.id !== undefined && typeof caller.id !== 'string')
    throw new TypeError(`run() option "caller.id" must be a string, got ${describe(caller.id)}`);
  const scopes =
    caller.scopes === undefined || caller.scopes === null ? null : stringList(caller.scopes, 'caller.scopes');
  const runId = options.runId ?? randomUUID();
  if (typeof runId !== 'string' || runId === '')
    throw new TypeError(`run() option "runId" must be a non-empty string, got ${describe(runId)}`);
  // Without a caller id there is no one to share a session with: `session` answers then last for this run only.
  const session = options.session ?? caller.id ?? null;
  if (session !== null && (typeof session !== 'string' || session === ''))
    throw new TypeError(`run() option "session" must be a non-empty string, got ${describe(session)}`);
  return { runId, tenant, caller: { id: caller.id ?? null, scopes }, session };
}

/** A tenant's limits as the provider gives them, checked; an unknown tenant is a ConfigurationError. */
export async function limitsOf(settings: RunnerSettings, tenant: string): Promise<Limits> {
  const raw = await settings.tenants(tenant);
  if (raw === undefined || raw === null)
    throw new ConfigurationError(
      `no limits for tenant ${JSON.stringify(tenant)}: the tenant provider returned ${describe(raw)}`,
    );
  if (typeof raw !== 'object') return parsedLimits(settings, tenant, raw);
  // Every field read once per dispatch. The same fields as the last read (by identity: a plan's array is the
  // gate's to check, entry by entry, at every call) are the same limits, validated then: that object again.
  const { tools, maxIterations, maxToolCalls, maxCost } = raw as TenantLimits;
  const last = limitsMemo.get(settings);
  if (
    last !== undefined &&
    last.tools === tools &&
    last.maxIterations === maxIterations &&
    last.maxToolCalls === maxToolCalls &&
    last.maxCost === maxCost &&
    (tools === undefined || tools === null || Array.isArray(tools))
  )
    return last.limits;
  const limits = parsedLimits(settings, tenant, { tools, maxIterations, maxToolCalls, maxCost });
  limitsMemo.set(settings, { tools, maxIterations, maxToolCalls, maxCost, limits });
  return limits;
}
/** The fields of each runner's last tenant read and the limits they gave (the same for every tenant alike). */
const limitsMemo = new WeakMap<
  RunnerSettings,
  {
    readonly tools: unknown;
    readonly maxIterations: unknown;
    readonly maxToolCalls: unknown;
    readonly maxCost: unknown;
    readonly limits: Limits;
  }
>();

function parsedLimits(settings: RunnerSettings, tenant: string, raw: unknown): Limits {
  const limits = parseTenantLimits(raw, `tenant ${JSON.stringify(tenant)}`, true);
  return Object.freeze({
    tools: limits.tools ?? null,
    maxIterations: limits.maxIterations ?? settings.maxIterations,
    maxToolCalls: limits.maxToolCalls ?? Infinity,
    maxCost: limits.maxCost ?? Infinity,
  });
}

const NEEDS: readonly (readonly [keyof RunnerStores, readonly string[]])[] = [
  ['approvals', ['put', 'get']],
  ['nonces', ['consume']],
  ['remembered', ['recall', 'remember']],
  ['ledger', ['reserve', 'record', 'release', 'inspect']],
  ['tallies', ['spend']],
];

/** The runner's stores, each checked for the methods the runner calls (a TypeError names the one missing). */
function storesOf(given: unknown, option: string): RunnerStores {
  if (given === undefined) return memoryStores();
  if (typeof given !== 'object' || given === null)
    throw new TypeError(
      `AgentRunner option "${option}" must be the stores { approvals, nonces, remembered, ledger, tallies }, got ${describe(given)}`,
    );
  const set = given as Record<string, unknown>;
  const picked: Record<string, unknown> = {};
  for (const [name, methods] of NEEDS) {
    const store = set[name] as Record<string, unknown> | null | undefined;
    for (const method of methods)
      if (typeof store !== 'object' || store === null || typeof store[method] !== 'function')
        throw new TypeError(
          `AgentRunner option "${option}": its "${name}" must be a store with ${method}(), got ${describe(store)}`,
        );
    picked[name] = store;
  }
  return Object.freeze(picked) as unknown as RunnerStores;
}

function tenantProvider(tenants: AgentRunnerOptions['tenants']): TenantProvider {
  if (tenants === undefined) return () => ({});
  if (typeof tenants === 'function') return tenants;
  if (typeof tenants === 'object' && tenants !== null)
    return (id) => (Object.hasOwn(tenants, id) ? tenants[id] : undefined);
  throw new TypeError(
    `AgentRunner option "tenants" must be a function or a record of tenant limits, got ${describe(tenants)}`,
  );
}

/**
 * The runner's key: the one given, or — on stores that are all in-process memory — the random key of those
 * stores (made once, shared by every runner on any of them). Shared stores without a key are a
 * ConfigurationError: a random key per process would sign states and approvals no other process verifies,
 * so a run paused here could be resumed nowhere else and an answered approval would die with this process.
 */
function runnerSecret(
  secret: AgentRunnerOptions['secret'],
  stores: RunnerStores,
  option: string,
  own: boolean,
): Uint8Array {
  if (secret !== undefined) return secretOf(secret, 'AgentRunner option "secret"');
  // Memory stores made for this runner alone (no "stores" given): no other runner can share them, so no
  // other runner needs their key — a random one, without a WeakMap entry per store for every runner made.
  if (own) return randomKey();
  const used = NEEDS.map(([name]) => stores[name] as object);
  const memory = used.every((store) => MEMORY.some((kind) => store instanceof kind));
  if (!memory)
    throw new ConfigurationError(
      `AgentRunner option "secret" is required: the "${option}" given are not all in-process memory stores, and every ` +
        'process that resumes a run or answers its approvals must sign with the same key. Pass one of at least 16 bytes ' +
        'from your secret store, e.g. `secret: process.env.TOOLGATE_SECRET` (set the same value in every process).',
    );
  const key = used.map((store) => memorySecrets.get(store)).find((k) => k !== undefined) ?? randomKey();
  for (const store of used) if (!memorySecrets.has(store)) memorySecrets.set(store, key);
  return key;
}
const MEMORY = [MemoryApprovalStore, MemoryNonceStore, MemoryRememberStore, MemoryLedger, MemoryTallyStore];
/** The random key of in-process memory stores, by store: two runners sharing one `memoryStores()` agree. */
const memorySecrets = new WeakMap<object, Uint8Array>();

function count(value: unknown, option: string, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min)
    throw new TypeError(`AgentRunner option "${option}" must be an integer >= ${min}, got ${describe(value)}`);
  return value;
}
