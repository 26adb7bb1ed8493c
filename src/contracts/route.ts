/**
 * THE SEAM a new integration implements: what differs between the routes a call arrives by (the registry,
 * the AgentRunner, the SDK adapters, the MCP gateway). Everything else — finding the tool, the snapshot,
 * validation, the allowlist, the policy, the precedence of approvals, the events, execution — is the gate's
 * and the same for every route. TYPES ONLY.
 *
 * Seven members, grouped by the moment they run (the counterpart of the MCP SDK's `Transport`):
 *
 *   name, grouped      what the route is, how its calls run
 *   person             phase 1: who answers an `ask` (after the policy's own handler, before the registry's)
 *   meter              phase 1 `admit` (before anyone is asked), phase 2 `charge` (refused calls count)
 *   observe            before phase 2 `endsBatch`; phase 2 `decided`: told each final Decision, may end the batch
 *   execute            phase 2: runs an allowed call around the gate's own step 7
 *   refresh            phase 2: the context in force now, before a call that waited runs
 *
 * Phase 2 runs one order for every route, call by call: stale? → re-judge → meter → announce → confirm →
 * execute (src/gate/dispatch.ts).
 */
import type { Decision } from '../decision.js';
import type { NormalizedCall, UnreadableCall } from '../formats/index.js';
import type { Tool } from '../tool.js';
import type { ApprovalRequest, ApprovalSettings, AskOutcome } from './approval.js';
import type { Attempt, GateContext, GateEnvironment, Meter, Refusal, ToolResult } from './gate.js';

export type { Attempt, Meter, Refusal } from './gate.js';

/** A call of phase 1 as a route sees it before any ask is resolved (nothing charged, nothing announced). */
export interface Candidate {
  readonly index: number;
  readonly call: NormalizedCall | UnreadableCall;
}

/**
 * What a route's `execute` may answer instead of a plain result: the batch ends with this call (a peer agent
 * paused or ended the run). `result` is this call's result, or null when it has none yet (it stays
 * `not_run`); every later call is `not_run`.
 */
export interface Halted {
  readonly halted: true;
  readonly result: ToolResult | null;
}

/** An allowed call about to execute: the Decision and the frozen snapshot it was made on. */
export interface DecidedCall {
  readonly index: number;
  readonly call: NormalizedCall;
  readonly decision: Decision & { readonly effect: 'allow' };
  readonly tool: Tool;
  /** The deep-frozen snapshot the Decision was made on: the arguments the call runs with. */
  readonly args: Readonly<Record<string, unknown>>;
}

/** What the gate decides a call again under: the route's context and the registry as they stand now (src/gate/ only). */
export interface RouteState {
  readonly context: GateContext;
  readonly env: GateEnvironment;
}

/** Who answers an `ask` on this route. Asked after the policy's own handler and before the registry's. */
export interface RoutePerson {
  /** How requests are bound and signed: the secret is the route owner's (a missing one is a TypeError). */
  readonly approvals: ApprovalSettings;
  /**
   * Put `request` to a person. `null`: no person for this request (the registry's handler decides);
   * `{ effect: 'pending' }`: ask later (the route pauses, the request is returned as `pending`).
   */
  ask(request: ApprovalRequest): AskOutcome | null | Promise<AskOutcome | null>;
  /**
   * True when `request` is one this route already put to its person and announced then (a verified request
   * it issued; never client data alone). @default false: announced before the person is asked
   */
  announced?(request: ApprovalRequest): boolean;
}

/** How an attempt is metered: the runner's budget and depth, a Limiter's windows. */
export interface RouteMeter extends Meter {
  /**
   * Phase 1, after steps 1–5 and before an ask is put to anyone: a refusal stops the call uncharged (the
   * runner's projected budget: no person is asked about a call past a cap). With `halt`, the calls after it
   * are not decided.
   */
  admit?(candidate: Candidate): Refusal | null;
}

/** What the route observes of the batch's Decisions. */
export interface RouteObserver {
  /**
   * After every call of the batch is decided and before any runs: true for a Decision that ends the batch
   * (the runner's `onRefusal: 'fail'`). That call is charged, announced and refused; no call of the batch runs.
   */
  endsBatch?(decision: Decision): boolean;
  /** Told each final Decision at step 8, after the registry's events. True ends the batch after this call. */
  decided?(decision: Decision, attempt: Attempt): boolean | void;
}

/** What differs between routes: at most seven members, each run at one moment of the path. */
export interface Route {
  /**
   * Which route this is: recorded as `Decision.asked` when this route's person answers an ask, so the audit
   * says who approved (`runner`: durable approvals; `adapter`: an SDK's approval flow; `gateway`: the MCP
   * gateway's elicitation, stores or inbox).
   *
   * @example
   * name: 'adapter'
   */
  readonly name: 'registry' | 'runner' | 'adapter' | 'gateway';
  /**
   * True: consecutive concurrency-safe calls of a batch run together and any other call waits for them and
   * runs alone (the registry). False: strictly one at a time, each after the previous one finished (the
   * runner, whose ledger and delegations need an order). A route with `execute` runs its calls one at a time.
   *
   * @example
   * grouped: false
   */
  readonly grouped: boolean;
  /**
   * Who answers an ask, after the policy's own handler and before the registry's: an SDK's approval flow, the
   * runner's durable approvals, MCP elicitation, an inbox. Its requests are bound (`ApprovalBinding`) and
   * their ids minted under `approvals.secret`, which the route's OWNER sets (never a key of this process), so
   * an id minted on one worker verifies on another. It may answer `pending` (the batch pauses: nothing runs,
   * the calls are `pending` / `not_run`), `null` (no person for this request), or an approval that does not
   * verify (`{ effect: 'invalid', reason }`). Absent: no person on this route.
   *
   * @example the gateway's elicitation person
   * ```ts
   * person: {
   *   approvals: { secret, owner: { kind: 'session', id: subject } },
   *   ask: async (request) => ((await elicit(request)) ? { effect: 'allow' } : { effect: 'deny' }),
   * }
   * ```
   */
  readonly person?: RoutePerson;
  /**
   * How attempts are metered. `admit` runs in phase 1 before anyone is asked (a refusal stops the call
   * uncharged); `charge` runs in phase 2 for every attempt, refused ones too, before the call is announced;
   * a refusal denies it at its stage (`budget`, `depth`, `limit`, `store`) and `halt` ends the batch. The
   * registry's own meter (its Limiter) is charged after the route's on every route. Absent: nothing charged.
   *
   * @example a Limiter as a meter (what the registry does with its `limiter`)
   * ```ts
   * meter: limiterMeter(limiter)   // src/limits/charge.ts: charge → a `limit` / `store` refusal or null
   * ```
   */
  readonly meter?: RouteMeter;
  /**
   * What the route observes of the Decisions: `endsBatch` before phase 2 (a Decision that ends the batch
   * before anything runs: that call alone is charged, announced and refused), `decided` at step 8 after the
   * registry's events (true ends the batch after this call: the calls after it are `not_run`).
   *
   * @example the runner's refusal loop
   * ```ts
   * observe: { decided: (decision) => decision.effect === 'deny' && ++refusals >= 3 }
   * ```
   */
  readonly observe?: RouteObserver;
  /**
   * Executes an allowed call around the gate's own step 7 (`proceed`: the tool's execute with the decided
   * snapshot, its timeout and the signal): the runner reserves its ledger key first and records the outcome
   * after, and runs a peer agent itself instead of calling `proceed`. It may end the batch (`Halted`).
   * Absent: `proceed` alone.
   *
   * @example a ledger around the tool
   * ```ts
   * execute: async (call, signal, proceed) => {
   *   const prior = await ledger.reserve(call.call.id);
   *   return prior ?? ledger.record(call.call.id, await proceed());
   * }
   * ```
   */
  execute?(
    call: DecidedCall,
    signal: AbortSignal | undefined,
    proceed: () => Promise<ToolResult>,
  ): Promise<ToolResult | Halted>;
  /**
   * The context in force now, read before a call that had to wait runs (an approval, an earlier call, a
   * delegation) and at every confirmation round; the registry is the dispatch's, as it stands then. The call
   * is decided again when this is a new context or the registry changed, else its allowlist step runs again on
   * the same context (a layer array changed in place). Absent: the dispatch's context.
   *
   * @example the runner re-reading the tenant's plan
   * ```ts
   * refresh: async () => contextWith(await tenants(run.tenant))
   * ```
   */
  refresh?(): GateContext | Promise<GateContext>;
}
