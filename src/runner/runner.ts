/**
 * AgentRunner: the run loop the "Tool allowlists" spec puts the gate in. Every tool call of a run, a peer
 * agent's included, goes through the core gate (src/gate.ts) with the allowlist resolved for that
 * dispatch from the agent's declaration, the tenant limits read then, and the caller's scopes.
 *
 *   model turn ─▶ phase 1: every call of the turn is decided (budget, gate, approvals) before any runs
 *              ─▶ phase 2: each call is charged, announced, then executed or answered with its refusal
 *
 * A turn that has a pending approval pauses before anything of it runs; a paused run is a signed JSON
 * RunState that resume() continues, in this process or another.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { ToolAllowlist, ToolAllowlistGuard } from '../allowlist.js';
import type { Decision, DecisionBase, DenyDecision } from '../decision.js';
import { ConfigurationError, RunStateError, ToolNotPermittedError } from '../errors.js';
import { Emitter } from '../events.js';
import { readCall, toolSchema, type NormalizedCall, type UnreadableCall } from '../formats/index.js';
import { environmentOf, isRegistry } from '../gate/environment.js';
import {
  allow,
  deny,
  precheck,
  refusalContent,
  type GateContext,
  type GateEnvironment,
  type Precheck,
} from '../gate/precheck.js';
import { announceAsk, announceDecision, resolveRunnerAsk, runAllowed } from '../gate/runner-bridge.js';
import { canonical, describe } from '../names.js';
import { isPermissionHandler, type PermissionRequest } from '../permissions/handler.js';
import type { ToolRegistry } from '../registry.js';
import type { Tool } from '../tool.js';
import { agentGraph, peerTools } from './agents.js';
import { InMemoryApprovalStore, isApprovalStore, type ApprovalStore, type LedgerEntry } from './approval-store.js';
import { hashOf, macOf, sameMac } from './signing.js';
import type {
  Agent,
  AgentSpec,
  ApprovalDecision,
  ApprovalHandler,
  ApprovalScope,
  BudgetCap,
  FrameState,
  Model,
  ModelTool,
  PendingApproval,
  ResumeOptions,
  RunEvent,
  RunEventBase,
  RunEventMap,
  RunEventType,
  RunMessage,
  RunOptions,
  RunResult,
  RunIdentity,
  RunState,
  RunToolCall,
  TenantLimits,
  TenantProvider,
  ToolMessage,
} from './types.js';

/** Options of {@link AgentRunner}. */
export interface AgentRunnerOptions {
  /** The tools, the permission policy and the handlers; read at every dispatch. */
  readonly registry: ToolRegistry;
  readonly model: Model;
  /** Tenant limits by tenant id: a provider called at every dispatch, or a record read at every dispatch. @default every tenant states nothing */
  readonly tenants?: TenantProvider | Readonly<Record<string, TenantLimits>>;
  /** Remembered answers, used decision nonces and the ledger of executed calls. @default new InMemoryApprovalStore() */
  readonly approvals?: ApprovalStore;
  /** The HMAC key approvals and run states are signed with (at least 16 bytes); a resuming process needs the same one. @default random, for this instance only */
  readonly secret?: string | Uint8Array;
  /** Asked when a rule answers `ask`, after the policy's own handler and before the registry's; may answer `pending`. @default none */
  readonly handler?: ApprovalHandler;
  /** What an allowlist refusal does: fail the run, or answer the model with an error result. @default 'fail' */
  readonly onRefusal?: 'fail' | 'continue';
  /** Capability scopes to tool names, applied to the caller's scopes at the boundary; a scope not in the map is a tool name. @default {} */
  readonly scopes?: Readonly<Record<string, readonly string[]>>;
  /** The cost a call to a tool (canonical name) charges against `maxCost`. @default () => 1 */
  readonly costOf?: (tool: string) => number;
  /** The same refused call (agent, canonical tool, arguments) this many times ends the run as `refusal_loop`. @default 3 */
  readonly refusalLoopLimit?: number;
  /** How deep delegation may nest (the root agent is depth 0). @default 4 */
  readonly maxDepth?: number;
  /** Model turns per run when the tenant sets no `maxIterations`. @default 25 */
  readonly maxIterations?: number;
}

interface Limits {
  readonly tools: readonly string[] | null;
  readonly maxIterations: number;
  readonly maxToolCalls: number;
  readonly maxCost: number;
}

interface Turn {
  readonly index: number;
  readonly calls: readonly RunToolCall[];
  readonly done: Map<string, ToolMessage>;
  active: string | null;
}

interface Frame {
  readonly agent: string;
  readonly key: string;
  readonly depth: number;
  readonly messages: RunMessage[];
  turn: Turn | null;
  readonly granted: Map<string, ApprovalDecision>;
  guard: ToolAllowlistGuard | null;
}

interface Run extends RunIdentity {
  readonly signal: AbortSignal | undefined;
  iterations: number;
  /** Attempts made before this segment (from the state) or replayed from the ledger; the guards hold the rest. */
  attemptsOutsideGuards: number;
  refusals: number;
  cost: number;
  readonly guards: ToolAllowlistGuard[];
  readonly loops: Map<string, number>;
  readonly decisions: Decision[];
  readonly frames: Frame[];
  pending: PendingApproval[];
  readonly peerTools: Map<string, { readonly tools: Map<string, Tool>; readonly agents: Map<string, string> }>;
}

type Ended =
  | { readonly kind: 'ended'; readonly status: 'failed'; readonly error: Error }
  | { readonly kind: 'ended'; readonly status: 'budget_exceeded'; readonly cap: BudgetCap }
  | { readonly kind: 'ended'; readonly status: 'refusal_loop'; readonly decision: DenyDecision };
type FrameOutcome = { readonly kind: 'completed'; readonly text: string } | { readonly kind: 'paused' } | Ended;

type Decided =
  | { readonly kind: 'replay'; readonly call: RunToolCall; readonly entry: LedgerEntry }
  | { readonly kind: 'budget'; readonly call: RunToolCall; readonly decision: DenyDecision; readonly cap: BudgetCap }
  | { readonly kind: 'pending'; readonly call: RunToolCall; readonly approval: PendingApproval }
  | {
      readonly kind: 'decided';
      readonly call: RunToolCall;
      readonly decision: Decision;
      readonly tool: Tool | null;
      readonly args: Record<string, unknown> | null;
      readonly allowlist: ToolAllowlist;
    };

type AskPrecheck = Extract<Precheck, { kind: 'ask' }>;

interface Binding {
  readonly runId: string;
  readonly frame: string;
  readonly turn: number;
  readonly callId: string;
  readonly canonical: string;
  readonly argsHash: string;
  readonly policyVersion: string | null;
}

const SCOPES: readonly ApprovalScope[] = ['once', 'run', 'session'];

/**
 * Runs agents against a model with every tool call on the gate's one path, enforcing the three allowlist
 * layers per dispatch, the tenant's budget caps, delegation to peers (which only narrows), and approvals
 * that can wait for a human across processes.
 *
 * @example
 * const runner = new AgentRunner({ registry, model, tenants: (id) => plans[id], secret: process.env.APPROVAL_KEY });
 * const result = await runner.run(concierge, 'Refund order 42', { tenant: 'acme', caller: { scopes: ['billing:write'] } });
 * if (result.status === 'paused') {
 *   const decision = runner.answer(result.pending[0]!, 'allow', { scope: 'run' });
 *   await runner.resume(JSON.parse(JSON.stringify(result.state)), [decision]);
 * }
 */
export class AgentRunner {
  readonly #registry: ToolRegistry;
  readonly #model: Model;
  readonly #tenants: TenantProvider;
  readonly #store: ApprovalStore;
  readonly #secret: Uint8Array;
  readonly #handler: ApprovalHandler | null;
  readonly #onRefusal: 'fail' | 'continue';
  readonly #scopeMap: ReadonlyMap<string, readonly string[]>;
  readonly #costOf: (tool: string) => number;
  readonly #loopLimit: number;
  readonly #maxDepth: number;
  readonly #maxIterations: number;
  readonly #events = new Emitter<RunEvent>();

  constructor(options: AgentRunnerOptions) {
    if (typeof options !== 'object' || options === null)
      throw new TypeError(`AgentRunner expects an options object, got ${describe(options)}`);
    if (!isRegistry(options.registry)) {
      throw new TypeError(`AgentRunner option "registry" must be a ToolRegistry, got ${describe(options.registry)}`);
    }
    this.#registry = options.registry;
    if (typeof options.model !== 'object' || options.model === null || typeof options.model.generate !== 'function') {
      throw new TypeError(
        `AgentRunner option "model" must have a generate(request) method, got ${describe(options.model)}`,
      );
    }
    this.#model = options.model;
    this.#tenants = tenantProvider(options.tenants);
    const store = options.approvals ?? new InMemoryApprovalStore();
    if (!isApprovalStore(store))
      throw new TypeError(`AgentRunner option "approvals" must be an ApprovalStore, got ${describe(store)}`);
    this.#store = store;
    this.#secret = secretOf(options.secret);
    if (options.handler !== undefined && !isPermissionHandler(options.handler)) {
      throw new TypeError(
        `AgentRunner option "handler" must be a function or an object with handle(request), got ${describe(options.handler)}`,
      );
    }
    this.#handler = options.handler ?? null;
    const onRefusal = options.onRefusal ?? 'fail';
    if (onRefusal !== 'fail' && onRefusal !== 'continue')
      throw new TypeError(`AgentRunner option "onRefusal" must be 'fail' or 'continue', got ${describe(onRefusal)}`);
    this.#onRefusal = onRefusal;
    this.#scopeMap = scopeMap(options.scopes);
    if (options.costOf !== undefined && typeof options.costOf !== 'function')
      throw new TypeError(`AgentRunner option "costOf" must be a function, got ${describe(options.costOf)}`);
    this.#costOf = options.costOf ?? (() => 1);
    this.#loopLimit = count(options.refusalLoopLimit, 'refusalLoopLimit', 3, 1);
    this.#maxDepth = count(options.maxDepth, 'maxDepth', 4, 0);
    this.#maxIterations = count(options.maxIterations, 'maxIterations', 25, 1);
  }

  /**
   * Subscribes to run events: every event, or one type. Returns the unsubscribe function.
   *
   * @example
   * runner.on('tool_refused', (event) => audit.write(event.path.join(' > '), event.decision.reason));
   */
  on(listener: (event: RunEvent) => void): () => void;
  on<T extends RunEventType>(type: T, listener: (event: RunEventMap[T]) => void): () => void;
  on(typeOrListener: RunEventType | ((event: RunEvent) => void), listener?: (event: never) => void): () => void {
    if (typeof typeOrListener === 'function') return this.#events.on(typeOrListener);
    if (typeof listener !== 'function')
      throw new TypeError(`on(type, listener): the listener must be a function, got ${describe(listener)}`);
    const type = typeOrListener;
    const typed = listener as (event: RunEvent) => void;
    return this.#events.on((event) => {
      if (event.type === type) typed(event);
    });
  }

  /** Runs `agent` on `input` until the model answers without tool calls, the run fails, hits a cap, loops, or pauses for approval. */
  async run(agent: Agent, input: string, options: RunOptions = {}): Promise<RunResult> {
    if (typeof input !== 'string')
      throw new TypeError(`run(agent, input): input must be a string, got ${describe(input)}`);
    if (typeof options !== 'object' || options === null)
      throw new TypeError(`run(): options must be an object, got ${describe(options)}`);
    const agents = agentGraph(agent);
    const env = environmentOf(this.#registry);
    for (const spec of Object.values(agents)) {
      for (const form of peerTools(agents, spec.name).keys()) {
        if (env.lookup(form))
          throw new ConfigurationError(
            `the registry has a tool named ${JSON.stringify(form)}, which is the name of a peer agent of ${JSON.stringify(spec.name)}`,
          );
      }
    }
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
    const session = options.session ?? (caller.id === undefined ? `${tenant}/run:${runId}` : `${tenant}/${caller.id}`);
    if (typeof session !== 'string')
      throw new TypeError(`run() option "session" must be a string, got ${describe(session)}`);
    const run: Run = {
      runId,
      root: agent.name,
      agents,
      tenant,
      caller: { id: caller.id ?? null, scopes },
      session,
      input,
      signal: options.signal,
      iterations: 0,
      attemptsOutsideGuards: 0,
      refusals: 0,
      cost: 0,
      guards: [],
      loops: new Map(),
      decisions: [],
      frames: [],
      pending: [],
      peerTools: new Map(),
    };
    const root: Frame = {
      agent: agent.name,
      key: agent.name,
      depth: 0,
      messages: [{ role: 'user', content: input }],
      turn: null,
      granted: new Map(),
      guard: null,
    };
    run.frames.push(root);
    this.#emit(run, root, { type: 'run_started', input });
    return this.#drive(run);
  }

  /**
   * Continues a paused run with decisions made by {@link answer}. The state may come from another process
   * (JSON); it must be unaltered and signed with this runner's secret, or a RunStateError is thrown and
   * nothing runs. Each paused call passes the gate again under the tenant limits and policy in force now.
   * `options.caller` (pass the caller's current scopes) and `options.agent` only narrow the state's caller
   * scopes and agent declarations, never widen them.
   */
  async resume(
    state: RunState,
    decisions: readonly ApprovalDecision[] = [],
    options: ResumeOptions = {},
  ): Promise<RunResult> {
    if (typeof options !== 'object' || options === null)
      throw new TypeError(`resume(): options must be an object, got ${describe(options)}`);
    const run = this.#restore(state, options);
    if (!Array.isArray(decisions))
      throw new TypeError(`resume(state, decisions): decisions must be an array, got ${describe(decisions)}`);
    this.#emit(run, run.frames[0]!, { type: 'run_resumed', decisions: decisions.length });
    const pending = new Map(state.pending.map((p) => [p.id, p]));
    const used = new Set<string>();
    for (const decision of decisions) {
      const approval = typeof decision === 'object' && decision !== null ? pending.get(decision.approvalId) : undefined;
      const frame = approval ? run.frames.find((f) => f.key === approval.frame) : undefined;
      let problem: string | null = null;
      if (!approval || !frame) problem = 'no pending approval of this run matches the decision';
      else if (!sameMac(decision.mac, this.#decisionMac(decision)))
        problem = 'the decision is not signed by this runner or was altered';
      else if (decision.runId !== approval.runId || decision.callId !== approval.callId)
        problem = 'the decision is for another call';
      else if (used.has(approval.id)) problem = 'a decision for this approval was already given';
      else if (!(await this.#store.consume(decision.nonce))) problem = 'the decision was already used (replayed)';
      if (problem !== null || !approval || !frame) {
        const at = approval && frame ? frame : run.frames[run.frames.length - 1]!;
        this.#emit(run, at, {
          type: 'approval_resolved',
          approvalId: typeof decision?.approvalId === 'string' ? decision.approvalId : '',
          callId: approval?.callId ?? null,
          accepted: false,
          answer: decision?.answer === 'allow' || decision?.answer === 'deny' ? decision.answer : null,
          reason: problem ?? 'refused',
          decision: null,
        });
        continue;
      }
      used.add(approval.id);
      frame.granted.set(approval.callId, decision);
    }
    return this.#drive(run);
  }

  /**
   * Signs a human's answer to a pending approval, for {@link resume}. `arguments` replaces the call's
   * arguments (the edited call passes the whole gate again); `scope` remembers the answer for the run or
   * the session. @default scope 'once'
   */
  answer(
    approval: PendingApproval,
    answer: 'allow' | 'deny',
    options: { readonly scope?: ApprovalScope; readonly arguments?: Readonly<Record<string, unknown>> } = {},
  ): ApprovalDecision {
    if (typeof approval !== 'object' || approval === null || typeof approval.id !== 'string')
      throw new TypeError(`answer(approval): expected a PendingApproval, got ${describe(approval)}`);
    if (answer !== 'allow' && answer !== 'deny')
      throw new TypeError(`answer(approval, answer): answer must be 'allow' or 'deny', got ${describe(answer)}`);
    const scope = options.scope ?? 'once';
    if (!SCOPES.includes(scope))
      throw new TypeError(`answer() option "scope" must be 'once', 'run' or 'session', got ${describe(scope)}`);
    const edited = options.arguments ?? null;
    if (edited !== null && (typeof edited !== 'object' || Array.isArray(edited)))
      throw new TypeError(`answer() option "arguments" must be an object, got ${describe(edited)}`);
    const fields = {
      approvalId: approval.id,
      runId: approval.runId,
      callId: approval.callId,
      canonical: approval.canonical,
      argsHash: approval.argsHash,
      policyVersion: approval.policyVersion,
      answer,
      scope,
      arguments: edited === null ? null : (JSON.parse(JSON.stringify(edited)) as Record<string, unknown>),
      nonce: randomUUID(),
    };
    return Object.freeze({ ...fields, mac: macOf(this.#secret, ['toolgate.decision', fields]) });
  }

  // ── the loop ──────────────────────────────────────────────────────────────────────────────────────

  async #drive(run: Run): Promise<RunResult> {
    let outcome: FrameOutcome;
    try {
      outcome = await this.#runFrame(run, run.frames[0]!);
    } catch (error) {
      outcome = { kind: 'ended', status: 'failed', error: error instanceof Error ? error : new Error(describe(error)) };
    }
    const root = run.frames[0]!;
    const base = {
      runId: run.runId,
      agent: run.root,
      tenant: run.tenant,
      messages: [...root.messages],
      decisions: [...run.decisions],
      iterations: run.iterations,
      attempts: attemptsOf(run),
      refusals: run.refusals,
      cost: run.cost,
    };
    if (outcome.kind === 'paused') {
      const state = this.#snapshot(run);
      this.#emit(run, run.frames[run.frames.length - 1]!, { type: 'run_paused', pending: state.pending });
      return { ...base, status: 'paused', output: null, state, pending: state.pending };
    }
    let result: RunResult;
    if (outcome.kind === 'completed') result = { ...base, status: 'completed', output: outcome.text };
    else if (outcome.status === 'failed') result = { ...base, status: 'failed', output: null, error: outcome.error };
    else if (outcome.status === 'budget_exceeded')
      result = { ...base, status: 'budget_exceeded', output: null, cap: outcome.cap };
    else result = { ...base, status: 'refusal_loop', output: null, decision: outcome.decision };
    this.#emit(run, root, {
      type: 'run_finished',
      status: result.status as Exclude<RunResult['status'], 'paused'>,
      error: result.status === 'failed' ? result.error : null,
    });
    return result;
  }

  async #runFrame(run: Run, frame: Frame): Promise<FrameOutcome> {
    for (;;) {
      if (frame.turn) {
        const outcome = await this.#runTurn(run, frame, frame.turn);
        if (outcome !== 'continue') return outcome;
        continue;
      }
      const limits = await this.#limits(run.tenant);
      if (run.iterations >= limits.maxIterations)
        return { kind: 'ended', status: 'budget_exceeded', cap: 'maxIterations' };
      // What the model is shown is a projection of this turn's allowlist; a hidden tool called anyway is still refused by the gate.
      const allowlist = this.#allowlist(run, frame, limits);
      const env = this.#env(run, frame);
      const tools: ModelTool[] = [];
      for (const name of allowlist.names) {
        const tool = env.lookup(canonical(name));
        if (tool) tools.push(toolSchema('gemini', tool) as ModelTool);
      }
      const index = frame.messages.filter((m) => m.role === 'assistant').length;
      run.iterations++;
      const response = await this.#model.generate({
        runId: run.runId,
        agent: frame.agent,
        instructions: run.agents[frame.agent]?.instructions ?? null,
        path: pathOf(run, frame),
        messages: [...frame.messages],
        tools,
      });
      const { text, calls } = readResponse(response);
      frame.messages.push({ role: 'assistant', content: text, toolCalls: calls });
      if (calls.length === 0) return { kind: 'completed', text: text ?? '' };
      frame.turn = { index, calls, done: new Map(), active: null };
    }
  }

  async #runTurn(run: Run, frame: Frame, turn: Turn): Promise<FrameOutcome | 'continue'> {
    if (turn.active !== null) {
      // The run paused inside the peer this call delegated to: continue it.
      const inner = run.frames[frame.depth + 1];
      if (!inner) throw new RunStateError(`the state has no frame for the delegation ${JSON.stringify(turn.active)}`);
      const call = turn.calls.find((c) => c.id === turn.active)!;
      const done = await this.#finishDelegation(run, frame, turn, call, inner);
      if (done !== null) return done;
    }

    // Phase 1: decide every remaining call of the turn before any of it runs.
    const decided: Decided[] = [];
    let projectedAttempts = 0;
    let projectedCost = 0;
    for (const call of turn.calls) {
      if (turn.done.has(call.id)) continue;
      const entry = await this.#store.entry(this.#ledgerKey(run, frame, turn, call.id));
      if (entry) {
        decided.push({ kind: 'replay', call, entry });
        projectedAttempts++;
        continue;
      }
      const limits = await this.#limits(run.tenant);
      const allowlist = this.#allowlist(run, frame, limits);
      const env = this.#env(run, frame);
      const context = this.#context(run, frame, limits, allowlist);
      const pre = await precheck(readable(call), context, env);
      const cost = this.#cost(call.name);
      const cap: BudgetCap | null =
        attemptsOf(run) + projectedAttempts + 1 > limits.maxToolCalls
          ? 'maxToolCalls'
          : run.cost + projectedCost + cost > limits.maxCost
            ? 'maxCost'
            : null;
      if (cap !== null) {
        const limit = cap === 'maxToolCalls' ? limits.maxToolCalls : limits.maxCost;
        const decision = deny(
          baseOf(pre),
          { stage: 'budget', by: 'budget', layer: null },
          `the run's ${cap} (${limit}) is spent; the run ends here`,
        );
        decided.push({ kind: 'budget', call, decision, cap });
        break;
      }
      projectedAttempts++;
      projectedCost += cost;
      if (pre.kind === 'decided') {
        const granted = frame.granted.get(call.id);
        if (granted) {
          // Approved while paused, but the gate decided without asking this time (a rule or the allowlist changed).
          this.#emit(run, frame, {
            type: 'approval_resolved',
            approvalId: granted.approvalId,
            callId: call.id,
            accepted: true,
            answer: granted.answer,
            reason: 'not needed: the gate decided the call without asking',
            decision: pre.decision,
          });
        }
        decided.push({
          kind: 'decided',
          call,
          decision: this.#depthCheck(run, frame, pre.decision),
          tool: pre.tool,
          args: pre.args,
          allowlist,
        });
        continue;
      }
      const asked = await this.#ask(run, frame, turn, call, pre, context, env);
      if ('approval' in asked) decided.push({ kind: 'pending', call, approval: asked.approval });
      else
        decided.push({
          kind: 'decided',
          call,
          decision: this.#depthCheck(run, frame, asked.decision),
          tool: asked.tool,
          args: asked.args,
          allowlist,
        });
    }

    // An allowlist refusal fails the run (by default) before anything of this turn runs.
    if (this.#onRefusal === 'fail') {
      const at = decided.findIndex((d) => d.kind === 'decided' && isAllowlistRefusal(d.decision));
      if (at >= 0) {
        // Only the refused call is charged and announced: the others of the turn were never dispatched.
        const refused = decided[at] as Extract<Decided, { kind: 'decided' }>;
        const error = this.#commit(run, frame, refused)!;
        turn.done.set(
          refused.call.id,
          toolMessage(refused.call, refusalContent(refused.decision as DenyDecision), true),
        );
        this.#closeTurn(frame, turn, 'the run failed before this call ran');
        return { kind: 'ended', status: 'failed', error };
      }
    }
    const pending = decided.filter((d): d is Extract<Decided, { kind: 'pending' }> => d.kind === 'pending');
    if (pending.length > 0) {
      run.pending = pending.map((d) => d.approval);
      for (const d of pending) this.#emit(run, frame, { type: 'approval_requested', approval: d.approval });
      return { kind: 'paused' };
    }

    // Phase 2: charge, announce, execute in order.
    for (const d of decided) {
      if (d.kind === 'pending') continue;
      if (d.kind === 'replay') {
        // Executed by an earlier continuation of this state: its recorded outcome, never a second execution.
        run.attemptsOutsideGuards++;
        turn.done.set(
          d.call.id,
          toolMessage(
            d.call,
            d.entry.settled ? d.entry.outcome.content : unknownOutcome(d.call),
            d.entry.settled ? d.entry.outcome.isError : true,
          ),
        );
        continue;
      }
      if (d.kind === 'budget') {
        run.refusals++;
        this.#announce(run, frame, d.decision, null);
        turn.done.set(d.call.id, toolMessage(d.call, refusalContent(d.decision), true));
        this.#closeTurn(frame, turn, 'the run ended before this call ran');
        return { kind: 'ended', status: 'budget_exceeded', cap: d.cap };
      }
      this.#commit(run, frame, d);
      const { decision, call } = d;
      if (decision.effect === 'deny') {
        turn.done.set(call.id, toolMessage(call, refusalContent(decision), true));
        const key = hashOf([frame.agent, decision.canonical, decision.parameters ?? rawArgs(call)]);
        const times = (run.loops.get(key) ?? 0) + 1;
        run.loops.set(key, times);
        if (times >= this.#loopLimit) {
          this.#closeTurn(frame, turn, 'the run ended before this call ran');
          return { kind: 'ended', status: 'refusal_loop', decision };
        }
        continue;
      }
      const peer = this.#peerOf(run, frame, decision.canonical);
      const ledgerKey = this.#ledgerKey(run, frame, turn, call.id);
      const prior = await this.#store.claim(ledgerKey);
      if (prior) {
        turn.done.set(
          call.id,
          toolMessage(
            call,
            prior.settled ? prior.outcome.content : unknownOutcome(call),
            prior.settled ? prior.outcome.isError : true,
          ),
        );
        continue;
      }
      if (peer !== undefined) {
        const input = String((d.args ?? {})['input'] ?? '');
        const inner: Frame = {
          agent: peer,
          key: `${frame.key}/${turn.index}.${call.id}>${peer}`,
          depth: frame.depth + 1,
          messages: [{ role: 'user', content: input }],
          turn: null,
          granted: new Map(),
          guard: null,
        };
        run.frames.push(inner);
        turn.active = call.id;
        const done = await this.#finishDelegation(run, frame, turn, call, inner);
        if (done !== null) return done;
        continue;
      }
      const result = await runAllowed(
        environmentOf(this.#registry),
        d.tool!,
        d.args!,
        decision,
        this.#context(run, frame, null, d.allowlist),
      );
      await this.#store.settle(ledgerKey, { content: result.content, isError: result.isError });
      turn.done.set(call.id, toolMessage(call, result.content, result.isError));
    }
    this.#closeTurn(frame, turn, '');
    return 'continue';
  }

  /** Runs (or continues) the peer frame of a delegation call; null when it completed and the turn goes on. */
  async #finishDelegation(
    run: Run,
    frame: Frame,
    turn: Turn,
    call: RunToolCall,
    inner: Frame,
  ): Promise<FrameOutcome | null> {
    const outcome = await this.#runFrame(run, inner);
    if (outcome.kind === 'paused') return outcome;
    run.frames.pop();
    turn.active = null;
    if (outcome.kind === 'ended') {
      turn.done.set(
        call.id,
        toolMessage(call, `Agent ${JSON.stringify(inner.agent)} ended with status ${outcome.status}.`, true),
      );
      this.#closeTurn(frame, turn, 'the run ended before this call ran');
      return outcome;
    }
    await this.#store.settle(this.#ledgerKey(run, frame, turn, call.id), { content: outcome.text, isError: false });
    turn.done.set(call.id, toolMessage(call, outcome.text, false));
    return null;
  }

  /** Appends the turn's results in call order (calls that never ran get a note) and leaves the turn. */
  #closeTurn(frame: Frame, turn: Turn, note: string): void {
    for (const call of turn.calls) {
      frame.messages.push(turn.done.get(call.id) ?? toolMessage(call, `Tool call not run: ${note}.`, true));
    }
    frame.turn = null;
    frame.granted.clear();
  }

  /** Step 6 and 8 for one decided call: the attempt is charged (refused ones too) and the Decision announced. */
  #commit(run: Run, frame: Frame, d: Extract<Decided, { kind: 'decided' }>): ToolNotPermittedError | null {
    if (frame.guard) frame.guard.follow(d.allowlist);
    else run.guards.push((frame.guard = new ToolAllowlistGuard(d.allowlist)));
    frame.guard.decide(d.call.name);
    run.cost += this.#cost(d.call.name);
    const error =
      d.decision.effect === 'deny' && isAllowlistRefusal(d.decision)
        ? new ToolNotPermittedError({
            tool: d.decision.tool,
            agent: d.decision.agent,
            reason: d.decision.layer!,
            permitted: d.allowlist.names,
          })
        : null;
    if (d.decision.effect === 'deny') run.refusals++;
    this.#announce(run, frame, d.decision, error);
    return error;
  }

  #announce(run: Run, frame: Frame, decision: Decision, error: ToolNotPermittedError | null): void {
    run.decisions.push(decision);
    announceDecision(environmentOf(this.#registry), decision);
    this.#emit(run, frame, { type: 'tool_decided', decision });
    if (decision.effect === 'deny') this.#emit(run, frame, { type: 'tool_refused', decision, error });
  }

  /** A delegation past the depth cap is refused (a cycle of peers ends here). */
  #depthCheck(run: Run, frame: Frame, decision: Decision): Decision {
    if (
      decision.effect !== 'allow' ||
      this.#peerOf(run, frame, decision.canonical) === undefined ||
      frame.depth + 1 <= this.#maxDepth
    )
      return decision;
    return deny(
      baseOf({ kind: 'decided', decision, tool: null, args: null }),
      { stage: 'budget', by: 'budget', layer: null },
      `delegation is capped at depth ${this.#maxDepth}; ${JSON.stringify(decision.tool)} would nest deeper`,
    );
  }

  // ── approvals ─────────────────────────────────────────────────────────────────────────────────────

  async #ask(
    run: Run,
    frame: Frame,
    turn: Turn,
    call: RunToolCall,
    pre: AskPrecheck,
    context: GateContext,
    env: GateEnvironment,
  ): Promise<
    | { readonly decision: Decision; readonly tool: Tool | null; readonly args: Record<string, unknown> | null }
    | { readonly approval: PendingApproval }
  > {
    const binding: Binding = {
      runId: run.runId,
      frame: frame.key,
      turn: turn.index,
      callId: call.id,
      canonical: pre.base.canonical,
      argsHash: hashOf(pre.args),
      policyVersion: env.policy?.version ?? null,
    };
    const base: DecisionBase = { ...pre.base, asked: 'runner' };
    const granted = frame.granted.get(call.id);
    // DESIGN: a policy's own handler decides an ask first. When the policy in force has one, neither an
    // answer given on resume nor a remembered answer stands in for it: the ask goes to that handler.
    const policyHandler = (env.policy?.handler ?? null) !== null;
    if (granted && !policyHandler) return this.#applyGranted(run, frame, call, pre, granted, binding, context, env);

    for (const key of policyHandler ? [] : this.#rememberKeys(run, frame, binding)) {
      const remembered = await this.#store.recall(key);
      if (
        remembered &&
        sameMac(remembered.mac, macOf(this.#secret, ['toolgate.remembered', key, remembered.answer, remembered.scope]))
      ) {
        const decision =
          remembered.answer === 'allow'
            ? allow(base, 'handler', `${pre.base.reason} (approved earlier for this ${remembered.scope})`)
            : deny(
                base,
                { stage: 'handler', by: 'handler', layer: null },
                `${pre.base.reason}; the approver denied it earlier for this ${remembered.scope}`,
              );
        return { decision, tool: pre.tool, args: pre.args };
      }
    }

    announceAsk(env, pre);
    let scope: ApprovalScope = 'once';
    const handler = this.#handler;
    const route = handler
      ? async (request: PermissionRequest): Promise<unknown> => {
          const answer: unknown = await (typeof handler === 'function' ? handler(request) : handler.handle(request));
          if (typeof answer === 'object' && answer !== null) {
            const { answer: a, scope: s } = answer as { answer?: unknown; scope?: unknown };
            if ((a !== 'allow' && a !== 'deny') || !SCOPES.includes(s as ApprovalScope)) return answer; // the gate refuses it as invalid
            scope = s as ApprovalScope;
            return a;
          }
          return answer;
        }
      : null;
    const outcome = await resolveRunnerAsk(pre, env, route);
    if (granted) {
      this.#emit(run, frame, {
        type: 'approval_resolved',
        approvalId: granted.approvalId,
        callId: call.id,
        accepted: false,
        answer: granted.answer,
        reason:
          'the policy in force has its own handler, which decides this ask; the decision given on resume was not used',
        decision: outcome.effect === 'pending' ? null : outcome,
      });
    }
    if (outcome.effect === 'pending') {
      const approval: PendingApproval = Object.freeze({
        id: macOf(this.#secret, ['toolgate.approval', binding]),
        runId: run.runId,
        callId: call.id,
        frame: frame.key,
        turn: turn.index,
        agent: frame.agent,
        path: pathOf(run, frame),
        tool: pre.base.tool,
        canonical: pre.base.canonical,
        parameters: pre.args,
        argsHash: binding.argsHash,
        policyVersion: binding.policyVersion,
        rule: pre.base.rule,
        reason: pre.base.reason,
      });
      return { approval };
    }
    if (outcome.asked === 'runner' && outcome.by === 'handler')
      await this.#remember(run, frame, binding, outcome.effect, scope);
    return { decision: outcome, tool: pre.tool, args: pre.args };
  }

  /** A decision given on resume: bound to this call's arguments and policy version, or refused. */
  async #applyGranted(
    run: Run,
    frame: Frame,
    call: RunToolCall,
    pre: AskPrecheck,
    granted: ApprovalDecision,
    binding: Binding,
    context: GateContext,
    env: GateEnvironment,
  ): Promise<{
    readonly decision: Decision;
    readonly tool: Tool | null;
    readonly args: Record<string, unknown> | null;
  }> {
    const base: DecisionBase = { ...pre.base, asked: 'runner' };
    let problem: string | null = null;
    if (granted.canonical !== binding.canonical) problem = 'the approval was given for another tool';
    else if (granted.argsHash !== binding.argsHash) problem = 'the approval was given for other arguments';
    else if (granted.policyVersion !== binding.policyVersion) {
      problem = `the approval was given under policy version ${JSON.stringify(granted.policyVersion)} and ${JSON.stringify(binding.policyVersion)} is in force`;
    }
    let outcome: { decision: Decision; tool: Tool | null; args: Record<string, unknown> | null };
    if (problem !== null) {
      outcome = {
        decision: deny(
          base,
          { stage: 'handler', by: 'handler_invalid', layer: null },
          `${pre.base.reason}; ${problem}, so the call is denied`,
        ),
        tool: pre.tool,
        args: pre.args,
      };
    } else if (granted.answer === 'deny') {
      outcome = {
        decision: deny(
          base,
          { stage: 'handler', by: 'handler', layer: null },
          `${pre.base.reason}; the approver denied the call`,
        ),
        tool: pre.tool,
        args: pre.args,
      };
    } else if (granted.arguments !== null) {
      // Edited arguments are a new call: validation, allowlist and rules again. An `ask` on exactly these
      // arguments is what the approver answered (the decision's MAC covers them).
      const edited = await precheck(
        { id: call.id, name: call.name, arguments: granted.arguments, format: 'toolgate' },
        context,
        env,
      );
      outcome =
        edited.kind === 'decided'
          ? { decision: edited.decision, tool: edited.tool, args: edited.args }
          : {
              decision: allow(
                { ...edited.base, asked: 'runner' },
                'handler',
                `${edited.base.reason} (approved with edited arguments)`,
              ),
              tool: edited.tool,
              args: edited.args,
            };
    } else {
      outcome = { decision: allow(base, 'handler', `${pre.base.reason} (approved)`), tool: pre.tool, args: pre.args };
    }
    if (problem === null && granted.arguments === null)
      await this.#remember(run, frame, binding, granted.answer, granted.scope);
    this.#emit(run, frame, {
      type: 'approval_resolved',
      approvalId: granted.approvalId,
      callId: call.id,
      accepted: problem === null,
      answer: granted.answer,
      reason: problem ?? (granted.arguments !== null ? 'answered with edited arguments' : `answered ${granted.answer}`),
      decision: outcome.decision,
    });
    return outcome;
  }

  #rememberKeys(run: Run, frame: Frame, binding: Binding): string[] {
    const what = [binding.canonical, binding.argsHash, binding.policyVersion ?? ''];
    return [
      JSON.stringify(['run', run.runId, frame.agent, ...what]),
      JSON.stringify(['session', run.session, run.tenant, frame.agent, ...what]),
    ];
  }

  async #remember(
    run: Run,
    frame: Frame,
    binding: Binding,
    answer: 'allow' | 'deny',
    scope: ApprovalScope,
  ): Promise<void> {
    if (scope === 'once') return;
    const [runKey, sessionKey] = this.#rememberKeys(run, frame, binding);
    const key = scope === 'run' ? runKey! : sessionKey!;
    await this.#store.remember(key, {
      answer,
      scope,
      mac: macOf(this.#secret, ['toolgate.remembered', key, answer, scope]),
    });
  }

  #decisionMac(decision: ApprovalDecision): string {
    const { approvalId, runId, callId, canonical: form, argsHash, policyVersion, answer, scope, nonce } = decision;
    try {
      return macOf(this.#secret, [
        'toolgate.decision',
        {
          approvalId,
          runId,
          callId,
          canonical: form,
          argsHash,
          policyVersion,
          answer,
          scope,
          arguments: decision.arguments,
          nonce,
        },
      ]);
    } catch {
      return '';
    }
  }

  // ── state ─────────────────────────────────────────────────────────────────────────────────────────

  #snapshot(run: Run): RunState {
    const frames: FrameState[] = run.frames.map((f) => ({
      agent: f.agent,
      key: f.key,
      depth: f.depth,
      messages: f.messages,
      turn: f.turn && {
        index: f.turn.index,
        calls: f.turn.calls,
        done: Object.fromEntries(f.turn.done),
        active: f.turn.active,
      },
      granted: Object.fromEntries(f.granted),
    }));
    const body = {
      kind: 'toolgate.run-state' as const,
      version: 1 as const,
      runId: run.runId,
      root: run.root,
      agents: run.agents,
      tenant: run.tenant,
      caller: run.caller,
      session: run.session,
      input: run.input,
      tally: { iterations: run.iterations, attempts: attemptsOf(run), refusals: run.refusals, cost: run.cost },
      loops: Object.fromEntries(run.loops),
      decisions: run.decisions,
      frames,
      pending: run.pending,
    };
    // Signed as JSON will carry it, so a state that went through JSON.stringify/parse verifies.
    const plain = JSON.parse(JSON.stringify(body)) as Omit<RunState, 'mac'>;
    return { ...plain, mac: macOf(this.#secret, ['toolgate.state', plain]) };
  }

  #restore(state: RunState, options: ResumeOptions): Run {
    if (typeof state !== 'object' || state === null || state.kind !== 'toolgate.run-state')
      throw new RunStateError(`resume() expects a RunState, got ${describe(state)}`);
    if (state.version !== 1)
      throw new RunStateError(`RunState version ${describe(state.version)} is not supported (expected 1)`);
    const { mac, ...body } = state;
    let expected: string;
    try {
      expected = macOf(this.#secret, ['toolgate.state', body]);
    } catch (cause) {
      throw new RunStateError('the RunState is not plain JSON', { cause });
    }
    if (!sameMac(mac, expected))
      throw new RunStateError('the RunState was altered or signed with another secret; nothing was resumed');
    const copy = structuredClone(body);
    return {
      runId: copy.runId,
      root: copy.root,
      agents: narrowAgents(copy.root, copy.agents, options.agent),
      tenant: copy.tenant,
      caller: narrowCaller(copy.caller, options.caller),
      session: copy.session,
      input: copy.input,
      signal: options.signal,
      iterations: copy.tally.iterations,
      attemptsOutsideGuards: copy.tally.attempts,
      refusals: copy.tally.refusals,
      cost: copy.tally.cost,
      guards: [],
      loops: new Map(Object.entries(copy.loops)),
      decisions: [...copy.decisions],
      frames: copy.frames.map((f) => ({
        agent: f.agent,
        key: f.key,
        depth: f.depth,
        messages: [...f.messages],
        turn: f.turn && {
          index: f.turn.index,
          calls: f.turn.calls,
          done: new Map(Object.entries(f.turn.done)),
          active: f.turn.active,
        },
        granted: new Map(Object.entries(f.granted)),
        guard: null,
      })),
      pending: [],
      peerTools: new Map(),
    };
  }

  // ── per dispatch ──────────────────────────────────────────────────────────────────────────────────

  async #limits(tenant: string): Promise<Limits> {
    const raw = await this.#tenants(tenant);
    if (raw === undefined || raw === null)
      throw new ConfigurationError(
        `no limits for tenant ${JSON.stringify(tenant)}: the tenant provider returned ${describe(raw)}`,
      );
    if (typeof raw !== 'object')
      throw new TypeError(`the limits of tenant ${JSON.stringify(tenant)} must be an object, got ${describe(raw)}`);
    const where = `tenant ${JSON.stringify(tenant)}`;
    return {
      tools: raw.tools === undefined || raw.tools === null ? null : stringList(raw.tools, `${where} tools`),
      maxIterations: limit(raw.maxIterations, `${where} maxIterations`, this.#maxIterations),
      maxToolCalls: limit(raw.maxToolCalls, `${where} maxToolCalls`, Infinity),
      maxCost: limit(raw.maxCost, `${where} maxCost`, Infinity),
    };
  }

  /** The allowlist of this dispatch: the root's declaration ∩ tenant ∩ caller, narrowed by each delegation hop. */
  #allowlist(run: Run, frame: Frame, limits: Limits): ToolAllowlist {
    const chain = run.frames.slice(0, frame.depth + 1);
    const root = run.agents[chain[0]!.agent]!;
    let list = ToolAllowlist.resolve(root.tools, {
      tenant: limits.tools,
      caller: this.#callerNames(run.caller.scopes),
      agent: root.name,
    });
    for (const hop of chain.slice(1)) list = list.narrowed(run.agents[hop.agent]!.tools, { agent: hop.agent });
    return list;
  }

  #callerNames(scopes: readonly string[] | null): string[] | null {
    if (scopes === null) return null;
    return scopes.flatMap((scope) => this.#scopeMap.get(scope) ?? [scope]);
  }

  /** The registry as it stands now, plus the `agent:<peer>` tools of this frame's agent. */
  #env(run: Run, frame: Frame): GateEnvironment {
    const env = environmentOf(this.#registry);
    const peers = this.#peers(run, frame.agent).tools;
    if (peers.size === 0) return env;
    return { ...env, lookup: (form) => peers.get(form) ?? env.lookup(form) };
  }

  #peers(run: Run, agent: string): { readonly tools: Map<string, Tool>; readonly agents: Map<string, string> } {
    let entry = run.peerTools.get(agent);
    if (!entry) {
      const tools = peerTools(run.agents, agent);
      const agents = new Map<string, string>();
      for (const name of run.agents[agent]?.peers ?? []) agents.set(canonical(`agent:${name}`), name);
      run.peerTools.set(agent, (entry = { tools, agents }));
    }
    return entry;
  }

  #peerOf(run: Run, frame: Frame, form: string): string | undefined {
    return this.#peers(run, frame.agent).agents.get(form);
  }

  #context(run: Run, frame: Frame, limits: Limits | null, allowlist: ToolAllowlist): GateContext {
    const context: GateContext = {
      agent: frame.agent,
      tenant: { id: run.tenant, tools: limits?.tools ?? null },
      caller: { ...(run.caller.id === null ? {} : { id: run.caller.id }), scopes: run.caller.scopes },
      allowlist,
      runId: run.runId,
    };
    return run.signal ? { ...context, signal: run.signal } : context;
  }

  #cost(name: string): number {
    const cost = this.#costOf(canonical(name));
    if (typeof cost !== 'number' || !Number.isFinite(cost) || cost < 0)
      throw new TypeError(`costOf(${JSON.stringify(name)}) must return a finite number >= 0, got ${describe(cost)}`);
    return cost;
  }

  #ledgerKey(run: Run, frame: Frame, turn: Turn, callId: string): string {
    return JSON.stringify([run.runId, frame.key, turn.index, callId]);
  }

  #emit<T extends RunEventType>(
    run: Run,
    frame: Frame,
    event: Omit<RunEventMap[T], keyof RunEventBase> & { readonly type: T },
  ): void {
    const base: RunEventBase = { runId: run.runId, agent: frame.agent, tenant: run.tenant, path: pathOf(run, frame) };
    this.#events.emit({ ...base, ...event } as unknown as RunEvent);
  }
}

// ── helpers ─────────────────────────────────────────────────────────────────────────────────────────

function attemptsOf(run: Run): number {
  let attempts = run.attemptsOutsideGuards;
  for (const guard of run.guards) attempts += guard.attempts;
  return attempts;
}

function pathOf(run: Run, frame: Frame): string[] {
  return run.frames.slice(0, frame.depth + 1).map((f) => f.agent);
}

function isAllowlistRefusal(
  decision: Decision,
): decision is DenyDecision & { layer: NonNullable<DenyDecision['layer']> } {
  return decision.effect === 'deny' && (decision.stage === 'allowlist' || decision.stage === 'lookup');
}

function baseOf(pre: Precheck): DecisionBase {
  if (pre.kind === 'ask') return pre.base;
  const {
    callId,
    tool,
    canonical: form,
    agent,
    tenant,
    runId,
    parameters,
    rule,
    reason,
    asked,
    policyVersion,
  } = pre.decision;
  return { callId, tool, canonical: form, agent, tenant, runId, parameters, rule, reason, asked, policyVersion };
}

function readable(call: RunToolCall): NormalizedCall | UnreadableCall {
  if (call.problem !== undefined) return { id: call.id, name: call.name, format: 'toolgate', problem: call.problem };
  return { id: call.id, name: call.name, arguments: call.arguments, format: 'toolgate' };
}

function rawArgs(call: RunToolCall): unknown {
  return call.arguments === undefined ? null : call.arguments;
}

function toolMessage(call: RunToolCall, content: string, isError: boolean): ToolMessage {
  return { role: 'tool', callId: call.id, tool: call.name, content, isError };
}

function unknownOutcome(call: RunToolCall): string {
  return `Tool ${JSON.stringify(call.name)} was started by an earlier continuation of this run and its outcome is unknown; it is not run again.`;
}

/** Reads a model response; a malformed one throws (the run fails). Duplicate call ids in one turn are refused, not merged. */
function readResponse(response: unknown): { text: string | null; calls: RunToolCall[] } {
  if (typeof response !== 'object' || response === null)
    throw new TypeError(`the model returned ${describe(response)}; expected { text?, toolCalls? }`);
  const { text, toolCalls } = response as { text?: unknown; toolCalls?: unknown };
  if (text !== undefined && typeof text !== 'string')
    throw new TypeError(`the model returned text ${describe(text)}; expected a string`);
  if (toolCalls !== undefined && !Array.isArray(toolCalls))
    throw new TypeError(`the model returned toolCalls ${describe(toolCalls)}; expected an array`);
  const calls: RunToolCall[] = [];
  const ids = new Set<string>();
  for (const raw of toolCalls ?? []) {
    const call = readCall(raw);
    let id = call.id;
    let problem = 'problem' in call ? call.problem : undefined;
    if (ids.has(id)) {
      let n = 2;
      while (ids.has(`${call.id}~${n}`)) n++;
      id = `${call.id}~${n}`;
      problem = `the call id ${JSON.stringify(call.id)} is used twice in one turn`;
    }
    ids.add(id);
    const args = 'arguments' in call ? (call.arguments as unknown) : null;
    calls.push(
      problem === undefined
        ? { id, name: call.name, arguments: jsonSafe(args) }
        : { id, name: call.name, arguments: null, problem },
    );
  }
  return { text: text ?? null, calls };
}

/** The raw arguments as JSON carries them (the transcript goes into the RunState). */
function jsonSafe(value: unknown): unknown {
  if (typeof value === 'string') return value;
  try {
    return JSON.parse(JSON.stringify(value ?? {})) as unknown;
  } catch {
    return String(value);
  }
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

function secretOf(secret: AgentRunnerOptions['secret']): Uint8Array {
  if (secret === undefined) return randomBytes(32);
  const bytes = typeof secret === 'string' ? Buffer.from(secret, 'utf8') : secret instanceof Uint8Array ? secret : null;
  if (bytes === null || bytes.length < 16)
    throw new TypeError(
      `AgentRunner option "secret" must be a string or bytes of at least 16 bytes, got ${describe(secret)}`,
    );
  return Uint8Array.from(bytes);
}

function scopeMap(scopes: AgentRunnerOptions['scopes']): ReadonlyMap<string, readonly string[]> {
  const map = new Map<string, readonly string[]>();
  if (scopes === undefined) return map;
  if (typeof scopes !== 'object' || scopes === null)
    throw new TypeError(`AgentRunner option "scopes" must be a record of scope → tool names, got ${describe(scopes)}`);
  for (const [scope, names] of Object.entries(scopes))
    map.set(scope, Object.freeze(stringList(names, `scopes[${JSON.stringify(scope)}]`)));
  return map;
}

function stringList(value: unknown, option: string): string[] {
  if (typeof value === 'string' || typeof (value as Iterable<unknown> | null)?.[Symbol.iterator] !== 'function') {
    throw new TypeError(`"${option}" must be an iterable of strings, got ${describe(value)}`);
  }
  const out: string[] = [];
  for (const item of value as Iterable<unknown>) {
    if (typeof item !== 'string') throw new TypeError(`"${option}" must hold strings, got ${describe(item)}`);
    out.push(item);
  }
  return out;
}

function count(value: unknown, option: string, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min)
    throw new TypeError(`AgentRunner option "${option}" must be an integer >= ${min}, got ${describe(value)}`);
  return value;
}

function limit(value: unknown, what: string, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0)
    throw new TypeError(`${what} must be a number >= 0, got ${describe(value)}`);
  return value;
}

/**
 * The caller on resume: the state's caller with its scopes intersected with the scopes given now. A
 * resume only narrows: scopes the state lacked are not added, and a state that stated no scopes takes
 * the ones given. A different caller id is refused.
 */
function narrowCaller(saved: RunState['caller'], given: ResumeOptions['caller']): RunState['caller'] {
  if (given === undefined) return saved;
  if (typeof given !== 'object' || given === null)
    throw new TypeError(`resume() option "caller" must be an object, got ${describe(given)}`);
  if (given.id !== undefined) {
    if (typeof given.id !== 'string')
      throw new TypeError(`resume() option "caller.id" must be a string, got ${describe(given.id)}`);
    if (given.id !== saved.id)
      throw new RunStateError(
        `resume() option "caller.id" is ${JSON.stringify(given.id)}, but the run's caller is ${JSON.stringify(saved.id)}; nothing was resumed`,
      );
  }
  if (given.scopes === undefined || given.scopes === null) return saved;
  const now = stringList(given.scopes, 'caller.scopes');
  if (saved.scopes === null) return { id: saved.id, scopes: now };
  const kept = new Set(now);
  return { id: saved.id, scopes: saved.scopes.filter((scope) => kept.has(scope)) };
}

/**
 * The agents on resume: each declaration in the state intersected with the one given now (tools by
 * canonical form, peers by name). An agent of the state missing from the given graph declares nothing.
 */
function narrowAgents(root: string, saved: RunState['agents'], given: ResumeOptions['agent']): RunState['agents'] {
  if (given === undefined) return saved;
  const now = agentGraph(given);
  if (given.name !== root)
    throw new RunStateError(
      `resume() option "agent" is ${JSON.stringify(given.name)}, but the run's root agent is ${JSON.stringify(root)}; nothing was resumed`,
    );
  const narrowed: Record<string, AgentSpec> = {};
  for (const [name, spec] of Object.entries(saved)) {
    const current = now[name];
    const tools = new Set((current?.tools ?? []).map((tool) => canonical(tool)));
    const peers = new Set(current?.peers ?? []);
    narrowed[name] = Object.freeze({
      ...spec,
      tools: Object.freeze(spec.tools.filter((tool) => tools.has(canonical(tool)))),
      peers: Object.freeze(spec.peers.filter((peer) => peers.has(peer))),
    });
  }
  return narrowed;
}
