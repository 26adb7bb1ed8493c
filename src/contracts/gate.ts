/**
 * What the gate reads and answers: who is asking (GateContext), what it reads of a registry
 * (GateEnvironment), what a call comes back as (ToolResult, DispatchResult), and the registry's events.
 * TYPES ONLY, the bottom of the import graph beside the other contracts: this file imports types from the
 * contracts and the core's leaf modules (decision, tool, allowlist, permissions, formats) and nothing
 * above them, so the gate, the registry, the limits and the stores can all depend on it without a circle.
 */
import type { AllowlistLayer, ToolAllowlist } from '../allowlist.js';
import type { Decision, DenyDecision, DenyStage } from '../decision.js';
import type { NormalizedCall, UnreadableCall } from '../formats/index.js';
import type { PermissionHandler } from '../permissions/handler.js';
import type { PermissionPolicy } from '../permissions/policy.js';
import type { PermissionResult } from '../permissions/result.js';
import type { Tool } from '../tool.js';
import type { ApprovalRequest } from './approval.js';

/** An agent as the gate sees it: a name and, optionally, the tools it declares. */
export interface AgentIdentity {
  readonly name: string;
  /** The agent layer. Without it, the agent declares every registered tool. */
  readonly tools?: Iterable<string>;
}

/**
 * Who is asking, for one dispatch. Each call's allowlist verdict is read from it at every call: a layer
 * array seen before is answered from an index kept beside it (verified against the array's current
 * entries when the array is not frozen), so a steady context costs look-ups, not a resolution.
 */
export interface GateContext {
  /** The agent's name, or its name and declared tools. @default 'agent', declaring every registered tool */
  readonly agent?: string | AgentIdentity;
  /** The tenant; `tools` null/undefined states nothing, an empty list refuses everything. */
  readonly tenant?: { readonly id?: string; readonly tools?: AllowlistLayer };
  /** The caller; `scopes` are tool names (map capability scopes to names before they get here). */
  readonly caller?: { readonly id?: string; readonly scopes?: AllowlistLayer };
  /** A resolved allowlist to use as is, instead of resolving one from agent, tenant and caller. */
  readonly allowlist?: ToolAllowlist;
  /** Tags decisions and events with a run. */
  readonly runId?: string;
  /** Cancels execution of the dispatched calls. */
  readonly signal?: AbortSignal;
}

/**
 * A gate context, fixed or read from each request (an HTTP request, an MCP session, an SDK's run context),
 * so the context can follow the request's token, session or SDK run context.
 *
 * @example
 * const context: ContextSource<{ clientId: string }> = (auth) => ({ caller: { id: auth.clientId } });
 */
export type ContextSource<Request> = GateContext | ((request: Request) => GateContext);

/** The result of one call, in toolgate's own shape. */
export interface ToolResult {
  readonly callId: string;
  /** The tool name as it was asked for. */
  readonly tool: string;
  /** `ok`: ran and returned; `error`: ran and threw or timed out; `refused`: never ran. */
  readonly status: 'ok' | 'error' | 'refused';
  readonly isError: boolean;
  /** The text the model is given. */
  readonly content: string;
  /** What the tool returned, when it ran successfully. */
  readonly value?: unknown;
  readonly decision: Decision;
}

/** A call whose ask a route's person left pending: nothing of the batch ran. */
export interface PendingResult {
  readonly status: 'pending';
  readonly callId: string;
  readonly tool: string;
  readonly request: ApprovalRequest;
}

/** A call of a batch that did not run and was not decided to the end (the batch paused or ended before it). */
export interface NotRunResult {
  readonly status: 'not_run';
  readonly callId: string;
  readonly tool: string;
}

/**
 * One result per call, in order. `pending` and `not_run` occur only on a route whose person can answer
 * `pending`, or whose meter halts, or whose observer ends batches; the registry's own route never sees them.
 */
export type DispatchResult = ToolResult | PendingResult | NotRunResult;

/** Events from `ToolRegistry.onChange`. Every event object is frozen: a listener cannot change what later ones see. */
export type RegistryEvent =
  | { readonly type: 'tool_registered'; readonly tool: string }
  | { readonly type: 'tool_unregistered'; readonly tool: string }
  | { readonly type: 'policy_changed'; readonly policy: PermissionPolicy | null }
  | { readonly type: 'handler_changed'; readonly handler: PermissionHandler | null }
  | {
      readonly type: 'permission_asked';
      readonly tool: string;
      readonly callId: string;
      readonly reason: string;
      readonly ruleName: string;
      readonly parameters: Readonly<Record<string, unknown>>;
    }
  | {
      readonly type: 'permission_denied';
      readonly tool: string;
      readonly callId: string;
      readonly reason: string;
      readonly ruleName: string | null;
      readonly parameters: Readonly<Record<string, unknown>> | null;
      readonly decision: DenyDecision;
    }
  | { readonly type: 'tool_decided'; readonly decision: Decision }
  | {
      readonly type: 'tool_executed';
      readonly callId: string;
      readonly tool: string;
      readonly status: 'ok' | 'error';
      readonly durationMs: number;
    };

/**
 * What a wing hands the gate's façade (src/gate/index.ts) for the tools, policy and handler a call is decided
 * under: a ToolRegistry, or a registry with a route's own tools found before its own (the façade's
 * `withTools`: the runner's `agent:<peer>` tools). The gate resolves the environment behind it inside
 * src/gate/ at every dispatch; a wing reads only these three methods, as the registry stands now.
 */
export interface ToolSource {
  /** The tool `name` names now (any spelling of its canonical name), or undefined. */
  get(name: string): Tool | undefined;
  getPermissionPolicy(): PermissionPolicy | null;
  getPermissionHandler(): PermissionHandler | null;
}

/**
 * What the gate reads from a registry at each call: the registry builds one per revision and binds it to
 * itself (src/gate/environment.ts); only src/gate/ reads it (`npm run check:imports`), the wings hand the
 * façade a {@link ToolSource}. Internal: never exported from an entry point.
 */
export interface GateEnvironment {
  lookup(form: string): Tool | undefined;
  /**
   * True while `lookup` gives the same answer for a form call after call: the registry's own environment while it is
   * the registry's current one (a change of tools makes a new one, and sets the old one's false). A copy with
   * another `lookup` (withTools) sets it false. @default false
   */
  fixedLookup?: boolean;
  /** The registered names in registration order; a new frozen array after each change. */
  registeredNames(): readonly string[];
  readonly policy: PermissionPolicy | null;
  readonly handler: PermissionHandler | null;
  /** What `ask` becomes when no handler is reachable. */
  readonly handlerFallback: PermissionResult;
  readonly handlerTimeoutMs: number;
  /** How long a tool may run when its metadata sets no `timeoutMs`. */
  readonly toolTimeoutMs: number;
  /** Changes whenever a tool, the policy, the handler or the meter changes: a call decided under another revision is decided again. */
  readonly revision: number;
  /**
   * The registry's own meter (its Limiter, src/limits/charge.ts), charged at step 6 on every route after the
   * route's own meter. @default none
   */
  readonly meter?: Meter | null;
  /** The registry's environment as it stands now (the same object while nothing changed). */
  current(): GateEnvironment;
  /** Emits an event to the registry's listeners (dispatch.ts and execute.ts only); the event is frozen first. */
  emit(event: RegistryEvent): void;
  /** False when no listener would hear an event now (absent: assume one would). */
  listening?(): boolean;
}

/** One attempt of a call, charged before the call executes or its refusal is returned (refused calls count too). */
export interface Attempt {
  /** The call's position in the batch. */
  readonly index: number;
  readonly call: NormalizedCall | UnreadableCall;
  /** The Decision so far (allow, or the refusal being charged). */
  readonly decision: Decision;
  /** The tool the call names, when it is registered. */
  readonly tool: Tool | null;
  /** The context the call is charged under (who is asking: a limit per caller reads `caller.id`). */
  readonly context: GateContext;
}

/**
 * Why a route stops a call when it is metered: a budget, a depth cap, a rate limit, or a store that could
 * not be asked (`store`: never counted as the limit's own refusal).
 */
export interface Refusal {
  readonly stage: Extract<DenyStage, 'budget' | 'depth' | 'limit' | 'store'>;
  /** Shown to the model. */
  readonly reason: string;
  /** The calls after this one in the batch are not run either (the run ends). @default false */
  readonly halt?: boolean;
}

/** Step 6 for one attempt: a route's meter, or the registry's own (its Limiter). */
export interface Meter {
  /** Charge one attempt (refused calls count). A refusal stops the call. */
  charge(attempt: Attempt): Refusal | null | Promise<Refusal | null>;
}
