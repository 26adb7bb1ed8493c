/**
 * The runner's public types: agents, tenant limits, the model interface, run results, durable-approval
 * records and the run events. Everything a paused run carries is plain JSON.
 */
import type { Decision, DenyDecision } from '../decision.js';
import type { ToolNotPermittedError } from '../errors.js';
import type { ToolCallInput } from '../formats/index.js';
import type { PermissionRequest } from '../permissions/handler.js';
import type { JsonSchema } from '../schema.js';
import type { ApprovalRequest, RememberScope, SignedAnswer } from '../contracts/approval.js';
import type { BudgetCap } from '../contracts/stores.js';
import type { TenantLimits } from '../config.js';

export type { BudgetCap };

/**
 * An agent: a name, the tools it declares (the agent layer of the allowlist) and, optionally, peer agents
 * it may delegate to. A peer is called as the tool `agent:<name>`, and like any tool it must be declared
 * in `tools` (and permitted by the tenant and caller layers) to be callable.
 *
 * @example
 * const pricing: Agent = { name: 'pricing', tools: ['quote'] };
 * const concierge: Agent = { name: 'concierge', tools: ['search', 'quote', 'agent:pricing'], peers: [pricing] };
 */
export interface Agent {
  readonly name: string;
  /** The declared tool names, in the order the model is shown them. */
  readonly tools: Iterable<string>;
  /** Agents this one may delegate to (cycles are allowed; the depth cap stops them). @default [] */
  readonly peers?: readonly Agent[];
  /** Given to the model with every request of this agent. @default null */
  readonly instructions?: string;
  /** How the `agent:<name>` tool describes this agent to a delegating model. @default a generic text */
  readonly description?: string;
}

export type { TenantLimits };

/** Returns a tenant's limits; undefined (an unknown tenant) or a throw fails the run. */
export type TenantProvider = (tenant: string) => TenantLimits | undefined | Promise<TenantLimits | undefined>;

/** One tool as the model is shown it. */
export interface ModelTool {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
}

/** A tool call as the transcript keeps it: normalised, with the raw arguments (a JSON string or a value). */
export interface RunToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: unknown;
  /** Set when the model's call could not be read at all; the gate refuses it with this text. */
  readonly problem?: string;
}

/** One message of a run's transcript. */
export type RunMessage =
  | { readonly role: 'user'; readonly content: string }
  | { readonly role: 'assistant'; readonly content: string | null; readonly toolCalls: readonly RunToolCall[] }
  | {
      readonly role: 'tool';
      readonly callId: string;
      readonly tool: string;
      readonly content: string;
      readonly isError: boolean;
    };

/** The result message of one tool call. */
export type ToolMessage = Extract<RunMessage, { role: 'tool' }>;

/** What a model is asked for one turn. */
export interface ModelRequest {
  readonly runId: string;
  /** The agent whose turn it is. */
  readonly agent: string;
  readonly instructions: string | null;
  /** The agents from the run's root to this one. */
  readonly path: readonly string[];
  readonly messages: readonly RunMessage[];
  /** Only the tools the allowlist of this turn permits, in declared order. */
  readonly tools: readonly ModelTool[];
}

/** A model's answer: text, tool calls, or both. No tool calls ends the agent's turn loop. */
export interface ModelResponse {
  readonly text?: string;
  /** Calls in any shape the registry reads (toolgate's own `{ id?, name, arguments }`, OpenAI, Anthropic, Gemini). */
  readonly toolCalls?: readonly ToolCallInput[];
}

/** The model interface: a real provider's SDK sits behind it, or {@link ScriptedModel} in tests and demos. */
export interface Model {
  generate(request: ModelRequest): ModelResponse | Promise<ModelResponse>;
}

/** Who started the run. `scopes` are tool names, or capability scopes the runner's `scopes` map turns into names. */
export interface RunCaller {
  readonly id?: string;
  /** null/undefined states nothing; an empty list refuses everything. */
  readonly scopes?: Iterable<string> | null;
}

/** Options of {@link AgentRunner.run}. */
export interface RunOptions {
  /** The tenant whose limits apply. @default 'default' */
  readonly tenant?: string;
  readonly caller?: RunCaller;
  /**
   * What `session`-scoped remembered approvals are shared across (within the tenant). @default the caller's
   * id; without one there is no session and a `session` answer lasts for this run only
   */
  readonly session?: string;
  /** @default a random UUID */
  readonly runId?: string;
  /** Cancels tool execution. */
  readonly signal?: AbortSignal;
}

/** Options of {@link AgentRunner.resume}. */
export interface ResumeOptions {
  /** Cancels tool execution. */
  readonly signal?: AbortSignal;
  /**
   * The caller as the application knows it now: pass the caller's current scopes on every resume. They
   * are intersected with the scopes in the state (a resume only narrows, never widens): a scope revoked
   * while the run was paused is gone on resume. `id`, when given, must be the run's caller id.
   * @default undefined (the caller in the state)
   */
  readonly caller?: RunCaller;
  /**
   * The run's root agent as declared now (the same shape as run()'s first argument). Each agent's tools
   * and peers are intersected with its declaration in the state; an agent of the state missing from this
   * graph declares nothing. The root's name must be the run's root. @default undefined (the declarations in the state)
   */
  readonly agent?: Agent;
}

/**
 * How long a human's answer is remembered: this call only, the rest of the run, or the session (the
 * approval model's `RememberScope`, under the runner's 0.1 name).
 */
export type ApprovalScope = RememberScope;

/**
 * The runner's approval handler: like a PermissionHandler, and it may also answer `pending` (the run
 * pauses and the approval is given later, possibly in another process) or an answer with a scope to remember.
 */
export type ApprovalAnswer =
  'allow' | 'deny' | 'pending' | { readonly answer: 'allow' | 'deny'; readonly scope: ApprovalScope };
export type ApprovalHandler =
  | { handle(request: PermissionRequest): ApprovalAnswer | Promise<ApprovalAnswer> }
  | ((request: PermissionRequest) => ApprovalAnswer | Promise<ApprovalAnswer>);

/**
 * A call waiting for a human: the approval model's request (`ApprovalRequest`), bound to exactly this call
 * of this run (owner `{ kind: 'run', id: runId }`, call id, canonical tool, arguments hash, rule, policy
 * version, caller, tenant, expiry, single-use nonce) and identified by a MAC over that binding under the
 * runner's `secret`. The runner's 0.1 name.
 */
export type PendingApproval = ApprovalRequest;

/**
 * A human's answer to a {@link PendingApproval}, signed by {@link AgentRunner.answer}: the approval model's
 * `SignedAnswer` (the runner's 0.1 name). Its `answer.arguments`, when set, replace the call's arguments and
 * the edited call passes the whole gate again. Single use: the approval's nonce is used up with the ledger
 * claim of its call, so a replay runs nothing.
 */
export type ApprovalDecision = SignedAnswer;

/** An answer accepted on resume for a call of the frame's turn: its request's id and binding, and the answer. */
export type GrantedAnswer = Omit<SignedAnswer, 'mac'>;

/** The stack frame of one agent in a paused run (the root first, the innermost delegation last). */
export interface FrameState {
  readonly agent: string;
  readonly key: string;
  readonly depth: number;
  readonly messages: readonly RunMessage[];
  readonly turn: TurnState | null;
  /** Answers accepted on resume and not yet used, by call id (a turn that paused again keeps them). */
  readonly granted: Readonly<Record<string, GrantedAnswer>>;
}

/** The tool calls of the turn a frame was in when the run paused. */
export interface TurnState {
  readonly index: number;
  readonly calls: readonly RunToolCall[];
  /** Results already final, by call id. */
  readonly done: Readonly<Record<string, ToolMessage>>;
  /** The delegation call whose peer is running (the next frame), or null. */
  readonly active: string | null;
}

/** A normalised agent as the state keeps it (peers by name, so cycles serialise). */
export interface AgentSpec {
  readonly name: string;
  readonly tools: readonly string[];
  readonly peers: readonly string[];
  readonly instructions: string | null;
  readonly description: string | null;
}

/** What identifies a run and who it runs for: kept by a live run and carried, signed, in its RunState. */
export interface RunIdentity {
  readonly runId: string;
  readonly root: string;
  readonly agents: Readonly<Record<string, AgentSpec>>;
  readonly tenant: string;
  readonly caller: { readonly id: string | null; readonly scopes: readonly string[] | null };
  /** Null when the run has no session (no caller id and no `session` option). */
  readonly session: string | null;
  readonly input: string;
}

/**
 * A paused run, as plain JSON: hand it to {@link AgentRunner.resume} in this process or another (with the
 * same `secret` and stores). Signed with the runner's secret; an altered state is refused.
 */
export interface RunState extends RunIdentity {
  readonly kind: 'toolgate.run-state';
  readonly version: 3;
  /** What the run spent until it paused; signed, and the floor of the store's tally on resume. */
  readonly tally: RunTally;
  /** Refused-call repetitions, by a hash of agent, canonical tool and arguments. */
  readonly loops: Readonly<Record<string, number>>;
  readonly decisions: readonly Decision[];
  readonly frames: readonly FrameState[];
  readonly pending: readonly PendingApproval[];
  readonly mac: string;
}

/**
 * What a run has spent. An attempt is a tool call charged against `maxToolCalls`: every call the gate
 * decided, refused ones included (peers' calls too). A call a cap stopped (a Decision at stage `budget`,
 * which ends the run) was not charged, so it is neither an attempt nor a refusal: `refusals <= attempts`
 * always, and `attempts` never exceeds `maxToolCalls`.
 */
export interface RunTally {
  /** Model turns, peers' included. */
  readonly iterations: number;
  /** Tool calls attempted (charged), refused ones included. */
  readonly attempts: number;
  /** The attempts that were refused, at any stage of the gate (the depth cap included). */
  readonly refusals: number;
  /** Summed cost of the attempts. */
  readonly cost: number;
}

/** How a run ended. */
export type RunStatus = 'completed' | 'failed' | 'budget_exceeded' | 'refusal_loop' | 'paused';

/** Fields every run result has. */
export interface RunResultBase extends RunTally {
  readonly runId: string;
  readonly agent: string;
  readonly tenant: string;
  /** The root agent's transcript. */
  readonly messages: readonly RunMessage[];
  /** Every Decision of the run, peers' included, in the order they were made. */
  readonly decisions: readonly Decision[];
}

/** The outcome of a run: a union on `status`. */
export type RunResult =
  | (RunResultBase & {
      readonly status: 'completed';
      readonly output: string;
      readonly error?: never;
      readonly state?: never;
    })
  | (RunResultBase & {
      readonly status: 'failed';
      readonly output: null;
      readonly error: Error;
      readonly state?: never;
    })
  | (RunResultBase & {
      readonly status: 'budget_exceeded';
      readonly output: null;
      readonly cap: BudgetCap;
      readonly error?: never;
      readonly state?: never;
    })
  | (RunResultBase & {
      readonly status: 'refusal_loop';
      readonly output: null;
      readonly decision: DenyDecision;
      readonly error?: never;
      readonly state?: never;
    })
  | (RunResultBase & {
      readonly status: 'paused';
      readonly output: null;
      readonly state: RunState;
      readonly pending: readonly PendingApproval[];
      readonly error?: never;
    });

/** Fields every run event carries. */
export interface RunEventBase {
  readonly runId: string;
  /** The agent the event is about (a peer's name for a peer's calls). */
  readonly agent: string;
  readonly tenant: string;
  /** The delegation path from the root agent to `agent`. */
  readonly path: readonly string[];
}

/** The closed map of run events. */
export interface RunEventMap {
  run_started: RunEventBase & { readonly type: 'run_started'; readonly input: string };
  tool_decided: RunEventBase & { readonly type: 'tool_decided'; readonly decision: Decision };
  /** Every refused call; `error` is the ToolNotPermittedError for an allowlist refusal. */
  tool_refused: RunEventBase & {
    readonly type: 'tool_refused';
    readonly decision: DenyDecision;
    readonly error: ToolNotPermittedError | null;
  };
  approval_requested: RunEventBase & { readonly type: 'approval_requested'; readonly approval: PendingApproval };
  /** A decision given on resume: accepted (with the Decision it led to) or refused (with why). */
  approval_resolved: RunEventBase & {
    readonly type: 'approval_resolved';
    readonly approvalId: string;
    readonly callId: string | null;
    readonly accepted: boolean;
    readonly answer: 'allow' | 'deny' | null;
    readonly reason: string;
    readonly decision: Decision | null;
  };
  run_paused: RunEventBase & { readonly type: 'run_paused'; readonly pending: readonly PendingApproval[] };
  run_resumed: RunEventBase & { readonly type: 'run_resumed'; readonly decisions: number };
  run_finished: RunEventBase & {
    readonly type: 'run_finished';
    readonly status: Exclude<RunStatus, 'paused'>;
    readonly error: Error | null;
  };
}
export type RunEventType = keyof RunEventMap;
export type RunEvent = RunEventMap[RunEventType];
