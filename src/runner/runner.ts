/**
 * AgentRunner: the run loop the "Tool allowlists" spec puts the gate in. Every tool call of a run, a peer
 * agent's included, goes through the core gate (src/gate.ts) with the allowlist resolved for that
 * dispatch from the agent's declaration, the tenant limits read then, and the caller's scopes.
 *
 *   model turn ─▶ phase 1: every remaining call of the turn is decided (budget, gate, approvals)
 *              ─▶ phase 2: each call is charged, announced, then executed or answered with its refusal;
 *                 after a delegation the rest of the turn goes back to phase 1 (decided again)
 *
 * A turn that has a pending approval pauses before anything of it runs; a paused run is a signed JSON
 * RunState that resume() continues, in this process or another. This file is the loop only: the run's
 * route (route.ts), durable approvals (approvals.ts), state (state.ts) and options (options.ts) live beside it.
 */
import type { ApprovalRecord } from '../contracts/approval.js';
import type { Decision, DenyDecision } from '../decision.js';
import { ConfigurationError, RunStateError } from '../errors.js';
import { Emitter } from '../events.js';
import { deny, dispatchCalls, previewCall, refusalContent } from '../gate/index.js';
import { describe } from '../names.js';
import { agentGraph, peerTools } from './agents.js';
import { answerBinding, DurableApprovals } from './approvals.js';
import { limitsOf, runIdentity, runnerSettings, type AgentRunnerOptions, type RunnerSettings } from './options.js';
import * as route from './route.js';
import {
  answerFromLedger,
  closeTurn,
  emitRun,
  ledgerKeyOf,
  newFrame,
  newTurn,
  pathOf,
  readable,
  readResponse,
  toolMessage,
  type Frame,
  type FrameOutcome,
  type Run,
  type Turn,
} from './run.js';
import { restore, snapshot } from './state.js';
import type {
  Agent,
  ApprovalDecision,
  ApprovalScope,
  PendingApproval,
  ResumeOptions,
  RunEvent,
  RunEventMap,
  RunEventType,
  RunOptions,
  RunResult,
  RunState,
  RunToolCall,
} from './types.js';

export type { AgentRunnerOptions } from './options.js';

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
  readonly #settings: RunnerSettings;
  readonly #events = new Emitter<RunEvent>();
  readonly #approvals: DurableApprovals;
  /** What every pass over a turn shares (route.ts). */
  readonly #host: route.RouteHost;

  constructor(options: AgentRunnerOptions) {
    this.#settings = runnerSettings(options);
    this.#approvals = new DurableApprovals(this.#settings, this.#events);
    this.#host = {
      settings: this.#settings,
      events: this.#events,
      approvals: this.#approvals,
      person: Object.freeze({ secret: this.#settings.secret, ttlMs: this.#settings.approvalTtlMs }),
      runPeer: (run, inner) => this.#runFrame(run, inner),
    };
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
    const identity = runIdentity(options);
    const agents = agentGraph(agent);
    const registry = this.#settings.registry;
    for (const spec of Object.values(agents)) {
      for (const form of peerTools(agents, spec.name).keys()) {
        if (registry.get(form))
          throw new ConfigurationError(
            `the registry has a tool named ${JSON.stringify(form)}, which is the name of a peer agent of ${JSON.stringify(spec.name)}`,
          );
      }
    }
    const run: Run = {
      runId: identity.runId,
      tenant: identity.tenant,
      caller: identity.caller,
      session: identity.session,
      root: agent.name,
      agents,
      input,
      signal: options.signal,
      tally: { iterations: 0, attempts: 0, refusals: 0, cost: 0 },
      loops: new Map(),
      decisions: [],
      frames: [newFrame(agent.name, agent.name, 0, input)],
      pending: [],
      peerTools: new Map(),
      keys: { tally: null, scope: null },
    };
    emitRun(this.#events, run, run.frames[0]!, { type: 'run_started', input });
    return this.#drive(run);
  }

  /**
   * Continues a paused run with decisions made by {@link answer}. The state may come from another process
   * (JSON); it must be unaltered and signed with this runner's secret, or a RunStateError is thrown and
   * nothing runs. Each paused call passes the gate again under the tenant limits and policy in force now,
   * and the run's tally continues (in the store: resuming one state twice cannot spend its budget twice).
   * `options.caller` (pass the caller's current scopes) and `options.agent` only narrow the state's caller
   * scopes and agent declarations, never widen them.
   */
  async resume(
    state: RunState,
    decisions: readonly ApprovalDecision[] = [],
    options: ResumeOptions = {},
  ): Promise<RunResult> {
    const run = restore(state, options, this.#settings.secret);
    if (!Array.isArray(decisions))
      throw new TypeError(`resume(state, decisions): decisions must be an array, got ${describe(decisions)}`);
    emitRun(this.#events, run, run.frames[0]!, { type: 'run_resumed', decisions: decisions.length });
    await this.#approvals.accept(run, state.pending, decisions);
    return this.#drive(run);
  }

  /**
   * Continues the paused run that stored approvals belong to, with the answers they hold: the records of
   * every approval of the pause, as an approval store you trust holds them (the inbox's: the store's first
   * answer is the person's answer; an approval that expired unanswered is a deny saying it timed out). The
   * run's state is the records' `paused.state`, signed by this runner, so the store holds no authority over
   * what runs; the answers are not signed again, and each approval's own nonce is used up with the ledger
   * claim of its call. Throws a RunStateError when the records are not a whole, answered pause.
   *
   * @example
   * // in any process on the same stores, once every approval of the pause is answered
   * const records = await Promise.all(ids.map((id) => stores.approvals.get(id)));
   * const result = await runner.resumeAnswered(records.filter((r) => r !== undefined));
   */
  async resumeAnswered(records: readonly ApprovalRecord[], options: ResumeOptions = {}): Promise<RunResult> {
    if (!Array.isArray(records) || records.length === 0)
      throw new TypeError(
        `resumeAnswered(records): expected the stored approvals of a pause, got ${describe(records)}`,
      );
    const first = records[0]!;
    const paused = typeof first === 'object' && first !== null ? first.paused : undefined;
    if (first?.source !== 'runner' || typeof paused !== 'object' || paused === null)
      throw new RunStateError(`approval ${JSON.stringify(first?.id)} is not one of a paused run; nothing was resumed`);
    const state = paused.state as RunState;
    const run = restore(state, options, this.#settings.secret);
    const byId = new Map(records.map((r) => [r.id, r]));
    // What was asked is the signed state's: every approval of its pause must be here and answered.
    for (const approval of state.pending) {
      const record = byId.get(approval.id);
      if (!record || record.status === 'pending')
        throw new RunStateError(
          `approval ${JSON.stringify(approval.id)} of run ${JSON.stringify(run.runId)} ${record ? 'is not answered yet' : 'is missing'}; nothing was resumed`,
        );
    }
    emitRun(this.#events, run, run.frames[0]!, { type: 'run_resumed', decisions: state.pending.length });
    this.#approvals.acceptStored(run, state.pending, byId);
    return this.#drive(run);
  }

  /**
   * Continues the paused run that the approval `id` in this runner's `stores.approvals` belongs to, once every
   * approval of its pause is answered there ({@link resumeAnswered}); null while one still waits (nothing is
   * resumed). Callable from any process on the same stores: a worker told of an answer (the inbox's
   * `approval.answered` webhook, a queue) resumes the run; the ledger makes each call of it run once, however
   * many resume it.
   */
  async resumeStored(id: string, options: ResumeOptions = {}): Promise<RunResult | null> {
    if (typeof id !== 'string' || id === '')
      throw new TypeError(`resumeStored(id): expected an approval id, got ${describe(id)}`);
    const store = this.#settings.stores.approvals;
    const record = await store.get(id);
    if (!record) throw new RunStateError(`no approval ${JSON.stringify(id)} is stored; nothing was resumed`);
    const pending = (record.paused?.state as Partial<RunState> | undefined)?.pending;
    if (record.source !== 'runner' || !Array.isArray(pending))
      throw new RunStateError(`approval ${JSON.stringify(id)} is not one of a paused run; nothing was resumed`);
    const records: ApprovalRecord[] = [];
    for (const approval of pending) {
      const stored = approval?.id === id ? record : await store.get(String(approval?.id));
      if (!stored || stored.status === 'pending') return null;
      records.push(stored);
    }
    // The record asked about first: its paused run is the one resumed.
    return this.resumeAnswered([record, ...records.filter((r) => r !== record)], options);
  }

  /**
   * Signs a human's answer to a pending approval, for {@link resume}. `arguments` replaces the call's
   * arguments (the edited call passes the whole gate again); `scope` remembers the answer for the run or
   * the session. @default scope 'once'
   */
  answer(
    approval: PendingApproval,
    answer: 'allow' | 'deny',
    options: {
      readonly scope?: ApprovalScope;
      readonly arguments?: Readonly<Record<string, unknown>>;
      /** A deny's reason, given back to the model with the refusal. */
      readonly reason?: string;
    } = {},
  ): ApprovalDecision {
    return this.#approvals.sign(approval, answer, options);
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
      ...run.tally,
    };
    if (outcome.kind === 'paused') {
      const state = snapshot(run, this.#settings.secret);
      emitRun(this.#events, run, run.frames[run.frames.length - 1]!, { type: 'run_paused', pending: state.pending });
      return { ...base, status: 'paused', output: null, state, pending: state.pending };
    }
    let result: RunResult;
    if (outcome.kind === 'completed') result = { ...base, status: 'completed', output: outcome.text };
    else if (outcome.status === 'failed') result = { ...base, status: 'failed', output: null, error: outcome.error };
    else if (outcome.status === 'budget_exceeded')
      result = { ...base, status: 'budget_exceeded', output: null, cap: outcome.cap };
    else result = { ...base, status: 'refusal_loop', output: null, decision: outcome.decision };
    emitRun(this.#events, run, root, {
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
      const limits = await limitsOf(this.#settings, run.tenant);
      const cap = await route.chargeTurn(this.#settings, run, limits);
      if (cap !== null) return { kind: 'ended', status: 'budget_exceeded', cap };
      const view = route.viewOf(this.#settings, run, frame, limits);
      const response = await this.#settings.model.generate({
        runId: run.runId,
        agent: frame.agent,
        instructions: run.agents[frame.agent]?.instructions ?? null,
        path: pathOf(run, frame),
        // The transcript itself, not a copy: it is append-only, and copying it every turn made a run quadratic.
        messages: frame.messages,
        tools: route.modelTools(this.#settings, view),
      });
      const { text, calls } = readResponse(response);
      frame.messages.push(Object.freeze({ role: 'assistant', content: text, toolCalls: calls }));
      const index = frame.turns++;
      if (calls.length === 0) return { kind: 'completed', text: text ?? '' };
      frame.turn = newTurn(index, calls);
    }
  }

  /**
   * One pass over a turn: the calls not yet done go through the gate's one path on the run's route — all
   * decided before any runs, then charged, announced and executed in order — up to the end of the turn or
   * the next delegation, after which the rest of the turn is dispatched again.
   */
  async #runTurn(run: Run, frame: Frame, turn: Turn): Promise<FrameOutcome | 'continue'> {
    if (turn.active !== null) {
      // The run paused inside the peer this call delegated to: continue it, then dispatch the rest again.
      const inner = run.frames[frame.depth + 1];
      if (!inner) throw new RunStateError(`the state has no frame for the delegation ${JSON.stringify(turn.active)}`);
      const call = turn.calls.find((c) => c.id === turn.active)!;
      // The delegation is decided again against the layers, agents and policy in force now: one withdrawn
      // while the run was paused (the plan, the agent graph) ends refused, and nothing more runs in the peer.
      const withdrawn = await this.#withdrawn(run, frame, call, inner);
      if (withdrawn !== null) {
        run.frames.length = frame.depth + 1;
        turn.active = null;
        const content = refusalContent(withdrawn);
        await this.#settings.ledger.record(ledgerKeyOf(run, frame, turn, call.id), { content, isError: true });
        turn.done.set(call.id, toolMessage(call, content, true));
        run.decisions.push(withdrawn);
        emitRun(this.#events, run, frame, { type: 'tool_decided', decision: withdrawn });
        emitRun(this.#events, run, frame, { type: 'tool_refused', decision: withdrawn, error: null });
        return 'continue';
      }
      return (
        (await this.#finishDelegation(run, frame, turn, call, inner, await this.#runFrame(run, inner))) ?? 'continue'
      );
    }
    // A call an earlier continuation of this state settled (ran, or was refused with a decision given on
    // resume) is answered from the ledger, never run again; one another worker is running now is waited for.
    const open: RunToolCall[] = [];
    for (const call of turn.calls) {
      if (turn.done.has(call.id)) continue;
      const found = await this.#settings.ledger.find(ledgerKeyOf(run, frame, turn, call.id), run.signal);
      if (!found) {
        open.push(call);
        continue;
      }
      run.tally.attempts++;
      answerFromLedger(turn, call, found);
      this.#approvals.settledElsewhere(run, frame, call.id);
    }
    const limits = await limitsOf(this.#settings, run.tenant);
    const view = route.viewOf(this.#settings, run, frame, limits);
    const pass = new route.RunRoute(this.#host, run, frame, turn, open, view);
    const results = await dispatchCalls(open.map(readable), view.context, view.source, pass);
    const pending = pass.pendingOf(results);
    if (pending.length > 0) {
      run.pending = [...pending];
      for (const approval of pending) emitRun(this.#events, run, frame, { type: 'approval_requested', approval });
      return { kind: 'paused' };
    }
    for (let i = 0; i < open.length; i++) {
      const result = results[i]!;
      const call = open[i]!;
      if ('content' in result && !turn.done.has(call.id))
        turn.done.set(call.id, toolMessage(call, result.content, result.isError));
    }
    const end = pass.end;
    if (end === null) {
      closeTurn(frame, turn, '');
      return 'continue';
    }
    switch (end.kind) {
      case 'delegated':
        return (await this.#finishDelegation(run, frame, turn, end.call, end.inner, end.outcome)) ?? 'continue';
      case 'failed':
        closeTurn(frame, turn, 'the run failed before this call ran');
        return { kind: 'ended', status: 'failed', error: end.error };
      case 'cap':
        closeTurn(frame, turn, 'the run ended before this call ran');
        return { kind: 'ended', status: 'budget_exceeded', cap: end.cap };
      case 'loop':
        closeTurn(frame, turn, 'the run ended before this call ran');
        return { kind: 'ended', status: 'refusal_loop', decision: end.decision };
    }
  }

  /**
   * The refusal of a paused delegation call under what is in force now (steps 1–5, no ask, and this runner's
   * depth cap), or null. It is judged on the input its peer frame was started with (the arguments it ran
   * with, edited by its approver if it was; the signed state holds it). One that comes out `ask` continues
   * only if it was approved before the pause for the same binding (tool, arguments, rule, policy version:
   * the run's signed decisions say so); else it needs a new approval and is refused.
   */
  async #withdrawn(run: Run, frame: Frame, call: RunToolCall, inner: Frame): Promise<DenyDecision | null> {
    const view = route.viewOf(this.#settings, run, frame, await limitsOf(this.#settings, run.tenant));
    // Not the run's last Decision with this call id: a deeper frame may have used the same id for the same
    // peer (an agent graph with a cycle), and the model chooses call ids.
    const started = inner.messages[0];
    if (started?.role !== 'user')
      throw new RunStateError(`the state's frame for the delegation ${JSON.stringify(call.id)} has no input`);
    const ran = { id: call.id, name: call.name, arguments: { input: started.content }, format: 'toolgate' as const };
    const pre = await previewCall(ran, view.context, view.source);
    if (pre.kind === 'decided' && pre.decision.effect === 'deny') return pre.decision;
    // The depth cap of the runner resuming it applies too (the paused one may have allowed deeper delegation).
    const max = this.#settings.maxDepth;
    if (frame.depth + 1 > max)
      return deny(
        pre.kind === 'decided' ? pre.decision : pre.base,
        { stage: 'depth', by: 'depth', layer: null },
        route.depthCapReason(max, call.name),
      );
    if (pre.kind === 'decided') return null;
    const binding = answerBinding({
      canonical: pre.base.canonical,
      parameters: pre.args,
      rule: pre.base.rule,
      policyVersion: pre.base.policyVersion,
    });
    // The last Decision of this very delegation (this frame's agent, this call, this input): the one it ran on.
    const form = pre.base.canonical;
    const last = run.decisions.findLast(
      (d) => d.callId === call.id && d.canonical === form && d.agent === frame.agent && sameInput(d, started.content),
    );
    const approved =
      last?.effect === 'allow' && last.asked !== null && last.by === 'handler' && answerBinding(last) === binding;
    if (approved) return null;
    return deny(
      pre.base,
      { stage: 'handler', by: 'approval_invalid', layer: null },
      `${pre.base.reason}; the delegation was not approved for this under the policy in force now, so it does not continue`,
    );
  }

  /** After the peer frame of a delegation call ran (or paused): null when it completed and the turn goes on. */
  async #finishDelegation(
    run: Run,
    frame: Frame,
    turn: Turn,
    call: RunToolCall,
    inner: Frame,
    outcome: FrameOutcome,
  ): Promise<FrameOutcome | null> {
    if (outcome.kind === 'paused') return outcome;
    run.frames.pop();
    turn.active = null;
    if (outcome.kind === 'ended') {
      turn.done.set(
        call.id,
        toolMessage(call, `Agent ${JSON.stringify(inner.agent)} ended with status ${outcome.status}.`, true),
      );
      closeTurn(frame, turn, 'the run ended before this call ran');
      return outcome;
    }
    await this.#settings.ledger.record(ledgerKeyOf(run, frame, turn, call.id), {
      content: outcome.text,
      isError: false,
    });
    turn.done.set(call.id, toolMessage(call, outcome.text, false));
    return null;
  }
}

/** True when a delegation Decision was made on exactly this input (its only argument). */
function sameInput(decision: Decision, input: string): boolean {
  const parameters = decision.parameters;
  return parameters !== null && Object.keys(parameters).length === 1 && parameters['input'] === input;
}
