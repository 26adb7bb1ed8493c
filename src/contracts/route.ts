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
 *   observe            phase 2: told each final Decision; may end the batch
 *   execute            phase 2: runs an allowed call around the gate's own step 7
 *   refresh            phase 2: the context and environment in force now, before a call that waited runs
 *
 * DRAFT (coordinator): the shape agreed for the "one approval model, one governance engine, one store model"
 * issue. The gate helper moves `GateContext`, `GateEnvironment`, `ToolResult`, `DecidedCall` & co. into
 * `contracts/gate.ts` and wires dispatch to this; until then `src/gate/route.ts` is the live seam.
 */
import type { Decision, DenyStage } from '../decision.js';
import type { NormalizedCall, UnreadableCall } from '../formats/index.js';
import type { GateContext, GateEnvironment } from '../gate/precheck.js';
import type { ToolResult } from '../registry.js';
import type { Tool } from '../tool.js';
import type { ApprovalRequest, ApprovalSettings, AskOutcome } from './approval.js';

/** One attempt, charged before the call executes or its refusal is returned (refused calls count too). */
export interface Attempt {
  /** The call's position in the batch. */
  readonly index: number;
  readonly call: NormalizedCall | UnreadableCall;
  /** The Decision so far (allow, or the refusal being charged). */
  readonly decision: Decision;
}

/** A call of phase 1 as a route sees it before any ask is resolved (nothing charged, nothing announced). */
export interface Candidate {
  readonly index: number;
  readonly call: NormalizedCall | UnreadableCall;
}

/**
 * Why a route stops a call when it is metered: a budget, a depth cap, a rate limit, or a store that could
 * not be asked (`store`: never counted as the limit's own refusal).
 */
export interface Refusal {
  readonly stage: Extract<DenyStage, 'budget' | 'depth' | 'limit'> | 'store';
  /** Shown to the model. */
  readonly reason: string;
  /** The calls after this one in the batch are not run either (the run ends). @default false */
  readonly halt?: boolean;
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

/** What a route reads to decide a call again. */
export interface RouteState {
  readonly context: GateContext;
  readonly env: GateEnvironment;
}

/**
 * Who answers an `ask` on this route. Asked after the policy's own handler and before the registry's.
 *
 * @example the gateway's elicitation person
 * ```ts
 * person: {
 *   approvals: { secret, owner: { kind: 'session', id: subject } },
 *   ask: async (request) => (await elicit(request)) ?? null,
 * }
 * ```
 */
export interface RoutePerson {
  /** How requests are bound and signed: the secret is the route owner's. */
  readonly approvals: ApprovalSettings;
  /**
   * Put `request` to a person. `null`: no person for this request (the registry's handler decides);
   * `{ effect: 'pending' }`: ask later (the route pauses, the request is stored).
   */
  ask(request: ApprovalRequest): AskOutcome | null | Promise<AskOutcome | null>;
  /**
   * True when `request` is one this route already put to its person and announced then (a verified request
   * it issued; never client data alone). @default false: announced before the person is asked
   */
  announced?(request: ApprovalRequest): boolean;
}

/**
 * How an attempt is metered: the runner's budget and depth, a Limiter's windows.
 *
 * @example a Limiter as the registry route's meter
 * ```ts
 * meter: { charge: (attempt) => limiter.charge(attempt) }
 * ```
 */
export interface RouteMeter {
  /**
   * Phase 1, after steps 1–5 and before an ask is put to anyone: a refusal stops the call uncharged (the
   * runner's projected budget: no person is asked about a call past a cap). With `halt`, the calls after it
   * are not decided.
   */
  admit?(candidate: Candidate): Refusal | null;
  /** Phase 2: charge one attempt (refused calls count). A refusal stops the call. */
  charge(attempt: Attempt): Refusal | null | Promise<Refusal | null>;
}

/**
 * What the route observes of the batch's Decisions.
 *
 * @example the runner's refusal loop
 * ```ts
 * observe: { decided: (decision) => (decision.effect === 'deny' && ++refusals >= 3) }
 * ```
 */
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
  /** Recorded as `Decision.asked` when this route's person answers. */
  readonly name: 'registry' | 'runner' | 'adapter' | 'gateway';
  /** Run consecutive concurrency-safe calls together (registry) or strictly one at a time (runner). */
  readonly grouped: boolean;
  /** Who answers an ask. Absent: no person on this route. */
  readonly person?: RoutePerson;
  /** How attempts are metered. Absent: nothing charged (a registry with a limiter meters through it). */
  readonly meter?: RouteMeter;
  /** What the route observes of the Decisions. */
  readonly observe?: RouteObserver;
  /**
   * Executes an allowed call around the gate's own step 7 (`proceed`: the tool's execute with the decided
   * snapshot, its timeout and the signal): the runner reserves its ledger key first and records the outcome
   * after, and runs a peer agent itself instead of calling `proceed`. A route with `execute` runs its calls
   * one at a time.
   */
  execute?(
    call: DecidedCall,
    signal: AbortSignal | undefined,
    proceed: () => Promise<ToolResult>,
  ): Promise<ToolResult | Halted>;
  /**
   * The context and environment in force now, read before a call that had to wait runs (an approval, an
   * earlier call, a delegation). Absent: the dispatch's context and the registry as it stands now.
   */
  refresh?(): RouteState | Promise<RouteState>;
}
