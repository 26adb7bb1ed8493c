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
import type { Decision, DenyDecision } from '../decision.js';
import { ConfigurationError, RunStateError } from '../errors.js';
import { Emitter } from '../events.js';
import { environmentOf } from '../gate/environment.js';
import { precheck, refusalContent } from '../gate/precheck.js';
import { runAllowed } from '../gate/runner-bridge.js';
import { describe } from '../names.js';
import type { Tool } from '../tool.js';
import { agentGraph, peerTools } from './agents.js';
import { DurableApprovals } from './approvals.js';
import {
  limitsOf,
  runIdentity,
  runnerSettings,
  type AgentRunnerOptions,
  type Limits,
  type RunnerSettings,
} from './options.js';
import * as route from './route.js';
import {
  answerFromLedger,
  closeTurn,
  emitRun,
  isAllowlistRefusal,
  ledgerKeyOf,
  newFrame,
  newTurn,
  pathOf,
  readable,
  readResponse,
  toolMessage,
  type Decided,
  type Frame,
  type FrameOutcome,
  type Run,
  type Turn,
} from './run.js';
import { hashOf } from './signing.js';
import { restore, snapshot } from './state.js';
import type {
  Agent,
  ApprovalDecision,
  ApprovalScope,
  BudgetCap,
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

  constructor(options: AgentRunnerOptions) {
    this.#settings = runnerSettings(options);
    this.#approvals = new DurableApprovals(this.#settings, this.#events);
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
    const env = environmentOf(this.#settings.registry);
    for (const spec of Object.values(agents)) {
      for (const form of peerTools(agents, spec.name).keys()) {
        if (env.lookup(form))
          throw new ConfigurationError(
            `the registry has a tool named ${JSON.stringify(form)}, which is the name of a peer agent of ${JSON.stringify(spec.name)}`,
          );
      }
    }
    const run: Run = {
      ...identity,
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
      const allowlist = route.allowlistOf(this.#settings, run, frame, limits);
      const response = await this.#settings.model.generate({
        runId: run.runId,
        agent: frame.agent,
        instructions: run.agents[frame.agent]?.instructions ?? null,
        path: pathOf(run, frame),
        // The transcript itself, not a copy: it is append-only, and copying it every turn made a run quadratic.
        messages: frame.messages,
        tools: route.modelTools(allowlist, route.environmentOf(this.#settings, run, frame)),
      });
      const { text, calls } = readResponse(response);
      frame.messages.push(Object.freeze({ role: 'assistant', content: text, toolCalls: calls }));
      const index = frame.turns++;
      if (calls.length === 0) return { kind: 'completed', text: text ?? '' };
      frame.turn = newTurn(index, calls);
    }
  }

  /** One pass over a turn: phase 1 then phase 2, up to the end of the turn or the next delegation. */
  async #runTurn(run: Run, frame: Frame, turn: Turn): Promise<FrameOutcome | 'continue'> {
    if (turn.active !== null) {
      // The run paused inside the peer this call delegated to: continue it, then decide the rest again.
      const inner = run.frames[frame.depth + 1];
      if (!inner) throw new RunStateError(`the state has no frame for the delegation ${JSON.stringify(turn.active)}`);
      const call = turn.calls.find((c) => c.id === turn.active)!;
      return (await this.#finishDelegation(run, frame, turn, call, inner)) ?? 'continue';
    }
    const decided = await this.#decideTurn(run, frame, turn);

    // An allowlist refusal fails the run (by default) before anything of this turn runs.
    if (this.#settings.onRefusal === 'fail') {
      const refused = decided.find(
        (d): d is Extract<Decided, { kind: 'decided' }> => d.kind === 'decided' && isAllowlistRefusal(d.decision),
      );
      if (refused) {
        // Only the refused call is charged and announced: the others of the turn were never dispatched.
        const cap = await route.chargeAttempt(this.#settings, run, refused.call, true, refused.limits);
        if (cap !== null) return this.#stopAtCap(run, frame, turn, refused.call, refused.decision, cap, refused.limits);
        const error = route.announce(this.#settings, this.#events, run, frame, refused.decision, refused.allowlist);
        turn.done.set(
          refused.call.id,
          toolMessage(refused.call, refusalContent(refused.decision as DenyDecision), true),
        );
        closeTurn(frame, turn, 'the run failed before this call ran');
        return { kind: 'ended', status: 'failed', error: error! };
      }
    }
    const pending = decided.filter((d): d is Extract<Decided, { kind: 'pending' }> => d.kind === 'pending');
    if (pending.length > 0) {
      run.pending = pending.map((d) => d.approval);
      for (const d of pending) emitRun(this.#events, run, frame, { type: 'approval_requested', approval: d.approval });
      return { kind: 'paused' };
    }

    // Phase 2: charge, announce, execute in order.
    for (const d of decided) {
      if (d.kind === 'pending') continue;
      if (d.kind === 'replay') {
        // Executed (and charged) by an earlier continuation of this state: its recorded outcome, never a second execution.
        run.tally.attempts++;
        answerFromLedger(turn, d.call, d.entry);
        continue;
      }
      if (d.kind === 'budget') return this.#stopAtCap(run, frame, turn, d.call, d.decision, d.cap, null);
      const { call } = d;
      const decision = await route.chargeLimit(this.#settings, run, frame, d);
      const cap = await route.chargeAttempt(this.#settings, run, call, decision.effect === 'deny', d.limits);
      if (cap !== null) return this.#stopAtCap(run, frame, turn, call, decision, cap, d.limits);
      route.announce(this.#settings, this.#events, run, frame, decision, d.allowlist);
      if (decision.effect === 'deny') {
        turn.done.set(call.id, toolMessage(call, refusalContent(decision), true));
        const key = hashOf([frame.agent, decision.canonical, decision.parameters ?? call.arguments ?? null]);
        const times = (run.loops.get(key) ?? 0) + 1;
        run.loops.set(key, times);
        if (times >= this.#settings.loopLimit) {
          closeTurn(frame, turn, 'the run ended before this call ran');
          return { kind: 'ended', status: 'refusal_loop', decision };
        }
        continue;
      }
      const ledgerKey = ledgerKeyOf(run, frame, turn, call.id);
      const prior = await this.#settings.store.claim(ledgerKey);
      if (prior) {
        answerFromLedger(turn, call, prior);
        continue;
      }
      const peer = route.peerOf(run, frame, decision.canonical);
      if (peer !== undefined) {
        const inner = route.delegate(run, frame, turn, call, peer, String((d.args ?? {})['input'] ?? ''));
        // Whatever the peer did (spent budget, a plan revoked meanwhile), the rest of the turn is decided again.
        return (await this.#finishDelegation(run, frame, turn, call, inner)) ?? 'continue';
      }
      const result = await runAllowed(
        environmentOf(this.#settings.registry),
        d.tool!,
        d.args!,
        decision,
        route.contextOf(run, frame, null, d.allowlist),
      );
      await this.#settings.store.record(ledgerKey, { content: result.content, isError: result.isError });
      turn.done.set(call.id, toolMessage(call, result.content, result.isError));
    }
    closeTurn(frame, turn, '');
    return 'continue';
  }

  /** Phase 1: every call of the turn not yet done, decided before any of it runs. Nothing is charged or announced. */
  async #decideTurn(run: Run, frame: Frame, turn: Turn): Promise<Decided[]> {
    const decided: Decided[] = [];
    const projected = { attempts: 0, cost: 0 };
    for (const call of turn.calls) {
      if (turn.done.has(call.id)) continue;
      const entry = await this.#settings.store.entry(ledgerKeyOf(run, frame, turn, call.id));
      if (entry) {
        decided.push({ kind: 'replay', call, entry });
        projected.attempts++;
        continue;
      }
      const limits = await limitsOf(this.#settings, run.tenant);
      const allowlist = route.allowlistOf(this.#settings, run, frame, limits);
      const env = route.environmentOf(this.#settings, run, frame);
      const context = route.contextOf(run, frame, limits, allowlist);
      const pre = await precheck(readable(call), context, env);
      const cost = route.costOf(this.#settings, call.name);
      // A call that would pass a cap is stopped here, before any handler is asked about it.
      const cap = route.projectedCap(run, limits, { attempts: projected.attempts + 1, cost: projected.cost + cost });
      if (cap !== null) {
        decided.push({ kind: 'budget', call, decision: route.budgetRefusal(route.baseOf(pre), cap, limits), cap });
        break;
      }
      projected.attempts++;
      projected.cost += cost;
      let answered: { decision: Decision; tool: Tool | null; args: Record<string, unknown> | null };
      if (pre.kind === 'decided') {
        this.#approvals.unneeded(run, frame, call, pre.decision);
        answered = pre;
      } else {
        // Decided again after a delegation: an answer given in this turn stands only for the same binding
        // (tool, arguments, policy version, rule) under the same tool, policy and handler objects.
        const binding = hashOf([pre.base.canonical, pre.args, env.policy?.version ?? null, pre.base.rule]);
        const under = [pre.tool, env.policy, env.handler] as const;
        const earlier = turn.answered.get(call.id);
        if (earlier && earlier.binding === binding && earlier.under.every((x, i) => x === under[i]))
          answered = { decision: earlier.decision, tool: pre.tool, args: pre.args };
        else {
          const asked = await this.#approvals.ask(run, frame, turn, call, pre, context, env);
          if ('approval' in asked) {
            decided.push({ kind: 'pending', call, approval: asked.approval });
            continue;
          }
          turn.answered.set(call.id, { binding, under, decision: asked.decision });
          answered = asked;
        }
      }
      const decision = route.depthCheck(this.#settings, run, frame, answered.decision);
      decided.push({ kind: 'decided', call, decision, tool: answered.tool, args: answered.args, allowlist, limits });
    }
    return decided;
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
      closeTurn(frame, turn, 'the run ended before this call ran');
      return outcome;
    }
    await this.#settings.store.record(ledgerKeyOf(run, frame, turn, call.id), {
      content: outcome.text,
      isError: false,
    });
    turn.done.set(call.id, toolMessage(call, outcome.text, false));
    return null;
  }

  /** A cap stopped `call`: its Decision becomes a budget refusal (not charged), announced, and the run ends. */
  #stopAtCap(
    run: Run,
    frame: Frame,
    turn: Turn,
    call: RunToolCall,
    decision: Decision,
    cap: BudgetCap,
    limits: Limits | null,
  ): FrameOutcome {
    const refusal =
      decision.effect === 'deny' && decision.stage === 'budget'
        ? decision
        : route.budgetRefusal(route.baseOf(decision), cap, limits!);
    route.announce(this.#settings, this.#events, run, frame, refusal, null);
    turn.done.set(call.id, toolMessage(call, refusalContent(refusal), true));
    closeTurn(frame, turn, 'the run ended before this call ran');
    return { kind: 'ended', status: 'budget_exceeded', cap };
  }
}
