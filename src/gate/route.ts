/**
 * The seam between the one path (dispatch.ts) and the routes a call arrives by: what differs between the
 * registry, the runner, the SDK adapters and the MCP gateway. Everything else — finding the tool, the
 * snapshot, validation, the allowlist, the policy, the precedence of approvals, the events, execution —
 * is the same for all of them, in dispatch.ts.
 */
import type { Decision, DenyStage } from '../decision.js';
import type { NormalizedCall, UnreadableCall } from '../formats/index.js';
import type { ToolResult } from '../registry.js';
import type { Tool } from '../tool.js';
import type { ApprovalRequest, ApprovalSettings, AskOutcome } from '../contracts/approval.js';
import type { GateContext, GateEnvironment } from './precheck.js';

/** One attempt, charged before the call executes or its refusal is returned (refused calls count too). */
export interface Attempt {
  /** The call's position in the batch. */
  readonly index: number;
  readonly call: NormalizedCall | UnreadableCall;
  /** The Decision so far (allow, or the refusal being charged). */
  readonly decision: Decision;
}

/** Why a route stops a call at charge time: a budget, a depth cap, a rate limit, a store that failed. */
export interface Refusal {
  readonly stage: Extract<DenyStage, 'budget' | 'depth' | 'limit' | 'store'>;
  /** Shown to the model. */
  readonly reason: string;
  /** The calls after this one in the batch are not run either (the run ends). @default false */
  readonly halt?: boolean;
}

/** A call of phase 1 as a route sees it before any ask is resolved (nothing charged, nothing announced). */
export interface Candidate {
  /** The call's position in the batch. */
  readonly index: number;
  readonly call: NormalizedCall | UnreadableCall;
}

/**
 * What a route's `execute` may answer instead of a plain result: the batch ends with this call (a peer agent
 * paused or ended the run, or the route decides the calls after it again in a new dispatch). `result` is this
 * call's result, or null when it has none yet (it stays `not_run`); every later call is `not_run`.
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

/** What differs between routes. */
export interface Route {
  /** Recorded as Decision.asked when this route's person answers. */
  readonly name: 'registry' | 'runner' | 'adapter' | 'gateway';
  /**
   * Ask a person: after the policy's own handler, before the registry's handler. Absent: no person on this
   * route. `null`: no person for this request (e.g. the SDK holds no answer to it); the registry's handler decides.
   */
  ask?(request: ApprovalRequest): AskOutcome | null | Promise<AskOutcome | null>;
  /**
   * True when `request` is one this route already put to its person and announced then (`permission_asked`):
   * e.g. an SDK approval request whose signature the route verified. Only for proof the route itself
   * issued, never for client-supplied data alone. @default false: announced before the person is asked
   */
  announced?(request: ApprovalRequest): boolean;
  /** How this route binds the requests its person answers. @default a key of this process; the context's run, else its session */
  readonly approvals?: ApprovalSettings;
  /**
   * Phase 1, after steps 1–5 and before an ask is put to anyone: a refusal stops the call here, uncharged
   * (the runner's projected budget: no person is asked about a call past a cap). With `halt`, the calls after
   * it are not decided and do not run. The call is announced with that refusal in phase 2, after the calls
   * before it ran.
   */
  admit?(candidate: Candidate): Refusal | null;
  /** Charge one attempt (refused calls count). Return a refusal to stop the call (budget / depth / limit). */
  charge?(attempt: Attempt): Refusal | null | Promise<Refusal | null>;
  /**
   * Executes an allowed call around the gate's own step 7 (`proceed`: the tool's execute with the decided
   * snapshot, its timeout and the signal): the runner claims its ledger key first and records the outcome
   * after, and runs a peer agent itself instead of calling `proceed`. Absent: `proceed` alone. A route with
   * `execute` runs its calls one at a time.
   */
  execute?(
    call: DecidedCall,
    signal: AbortSignal | undefined,
    proceed: () => Promise<ToolResult>,
  ): Promise<ToolResult | Halted>;
  /** Run consecutive concurrency-safe calls together (registry) or strictly one at a time (runner). */
  readonly grouped: boolean;
  /**
   * The context and environment in force now, read before a call that had to wait (an approval, an earlier
   * call, a delegation) runs. The call is decided again when they are a new context or another registry
   * revision, else its allowlist step runs again on the same context (a layer array changed in place).
   * Absent: the dispatch's context and the registry as it stands now.
   */
  refresh?(): RouteState | Promise<RouteState>;
  /**
   * After every call of the batch is decided and before any runs (before a pending ask pauses it): true for a
   * Decision that ends the batch (the runner's `onRefusal: 'fail'`). That call is charged, announced and
   * refused; no call of the batch runs.
   */
  endsBatch?(decision: Decision): boolean;
  /**
   * Told each final Decision at step 8, after the registry's events (the runner's own run events). True ends
   * the batch after this call (the runner's refusal loop): the calls after it are `not_run`.
   */
  decided?(decision: Decision, attempt: Attempt): boolean | void;
}

/** What a route reads to decide a call again. */
export interface RouteState {
  readonly context: GateContext;
  readonly env: GateEnvironment;
}

/** The registry's own route: no person, no charge, concurrency-safe calls run together. */
export const REGISTRY_ROUTE: Route = Object.freeze({ name: 'registry', grouped: true });
