/**
 * The route of a run: what the runner adds around the gate's one path (`dispatchCalls`) for each pass over
 * a turn. Which allowlist (the root's declaration ∩ tenant ∩ caller, narrowed at every delegation hop),
 * which environment (the registry now, plus the agent's `agent:<peer>` tools), who is asked (durable
 * approvals: a decision given on resume, a remembered answer, the runner's handler, which may pause the
 * run), how an attempt is charged (the store's tally, shared by every continuation of the run; the depth
 * cap), how a call executes (the ledger's claim and record around it; a peer agent's frame), and what the
 * run records of each Decision (run events, refusal loops).
 */
import { ToolAllowlist } from '../allowlist.js';
import { toolsOfScopes } from '../config.js';
import type { Decision, DenyDecision } from '../decision.js';
import { ToolNotPermittedError } from '../errors.js';
import type { Emitter } from '../events.js';
import { toolSchema } from '../formats/index.js';
import type { ApprovalRequest, ApprovalSettings, AskOutcome } from '../contracts/approval.js';
import type { Attempt, DispatchResult, GateContext, Refusal, ToolResult, ToolSource } from '../contracts/gate.js';
import type {
  Candidate,
  DecidedCall,
  Halted,
  Route,
  RouteMeter,
  RouteObserver,
  RoutePerson,
} from '../contracts/route.js';
import { refusalContent, withTools } from '../gate/index.js';
import { canonical, describe } from '../names.js';
import type { RunSpend } from '../contracts/stores.js';
import { peerTools, peerToolName } from './agents.js';
import { answerBinding, underOf, type DurableApprovals, type GrantUse } from './approvals.js';
import { limitsOf, type Limits, type RunnerSettings } from './options.js';
import {
  answerFromLedger,
  emitRun,
  isAllowlistRefusal,
  ledgerKeyOf,
  newFrame,
  tallyKeyOf,
  toolMessage,
  type Frame,
  type FrameOutcome,
  type FrameView,
  type PeerTools,
  type Run,
  type Turn,
} from './run.js';
import { hashOf } from '../crypto.js';
import type { Tool } from '../tool.js';
import type { BudgetCap, ModelTool, PendingApproval, RunEvent, RunToolCall } from './types.js';

const NOTHING: RunSpend = { iterations: 0, attempts: 0, cost: 0 };
/** One model turn's charge (the same frozen object every turn). */
const TURN: RunSpend = Object.freeze({ ...NOTHING, iterations: 1 });
/** What a pass left pending when nothing is. */
const NO_PENDING: readonly PendingApproval[] = Object.freeze([]);
/** What a pass that asked nobody used of the answers given on resume: nothing. */
const NO_USE: GrantUse = Object.freeze({
  applied: new Map<string, { readonly problem: string | null }>(),
  pending() {},
});

/** What every pass of one runner shares: made once per AgentRunner. */
export interface RouteHost {
  readonly settings: RunnerSettings;
  readonly events: Emitter<RunEvent>;
  readonly approvals: DurableApprovals;
  /** Durable approvals as the run's person, bound under the runner's own secret (its `secret` option). */
  readonly person: ApprovalSettings;
  /** Runs a peer agent's frame (a delegation). */
  readonly runPeer: (run: Run, inner: Frame) => Promise<FrameOutcome>;
}

/**
 * The context and environment of a dispatch in `frame`. At the root the layers go to the gate as they are
 * (the registry's own allowlist step: indexed per layer, a layer changed in place is seen at the next call);
 * below it, the root's allowlist narrowed by each delegation hop is resolved and passed as is.
 */
export function viewOf(settings: RunnerSettings, run: Run, frame: Frame, limits: Limits): FrameView {
  const source = sourceOf(settings, run, frame);
  // The same context object while the plan's array stays the same (the gate's allowlist step then answers
  // from its memo; the context names no registered tool, so a registry change keeps it); the limits' numbers
  // are read afresh every time.
  const last = frame.view;
  if (
    last !== null &&
    last.tenant === limits.tools &&
    // A list resolved below the root is a snapshot: reused only for a plan that cannot change in place.
    (frame.depth === 0 || limits.tools === null || Object.isFrozen(limits.tools))
  ) {
    // The same limits (limitsOf answers the same object for the same fields) and source: the same view.
    if (last.view.limits === limits && last.view.source === source) return last.view;
    const view = { context: last.context, source, limits };
    frame.view = { tenant: last.tenant, context: last.context, view };
    return view;
  }
  const root = run.agents[run.frames[0]!.agent]!;
  const callerTools = callerToolsOf(settings, run);
  const tenant = { id: run.tenant, tools: limits.tools };
  const caller = run.caller.id === null ? { scopes: callerTools } : { id: run.caller.id, scopes: callerTools };
  let context: GateContext;
  if (frame.depth === 0) {
    const agent = { name: root.name, tools: root.tools };
    context = run.signal
      ? { agent, tenant, caller, runId: run.runId, signal: run.signal }
      : { agent, tenant, caller, runId: run.runId };
  } else {
    let list = ToolAllowlist.resolve(root.tools, { tenant: limits.tools, caller: callerTools, agent: root.name });
    for (let i = 1; i <= frame.depth; i++) {
      const hop = run.frames[i]!.agent;
      list = list.narrowed(run.agents[hop]!.tools, { agent: hop });
    }
    context = run.signal
      ? { agent: frame.agent, tenant, caller, allowlist: list, runId: run.runId, signal: run.signal }
      : { agent: frame.agent, tenant, caller, allowlist: list, runId: run.runId };
  }
  const view = { context, source, limits };
  frame.view = { tenant: limits.tools, context, view };
  return view;
}
/** The caller layer: scopes mapped through the runner's scope map (once per run), or taken as tool names without one. */
function callerToolsOf(settings: RunnerSettings, run: Run): readonly string[] | null {
  const scopes = run.caller.scopes;
  if (scopes === null || settings.scopes === null) return scopes;
  let mapped = callerTools.get(run);
  if (!mapped) callerTools.set(run, (mapped = Object.freeze(toolsOfScopes(settings.scopes, scopes))));
  return mapped;
}
const callerTools = new WeakMap<Run, readonly string[]>();

/**
 * The registry as it stands at each call, plus the `agent:<peer>` tools of this frame's agent. An agent with
 * no peers has the registry itself: `withTools` with no tools finds what the registry finds and reads its
 * environment as is, and made a source (closures, two WeakMap entries) per run for nothing.
 */
function sourceOf(settings: RunnerSettings, run: Run, frame: Frame): ToolSource {
  const peers = peersOf(run, frame.agent);
  return (peers.source ??= peers.tools.size === 0 ? settings.registry : withTools(settings.registry, peers.tools));
}

/** What the model is shown: a projection of this dispatch's allowlist (a hidden tool called anyway is still refused). */
export function modelTools(settings: RunnerSettings, view: FrameView): readonly ModelTool[] {
  const names = view.context.allowlist?.names ?? settings.registry.allowlist(view.context).names;
  // The list is cached by the allowlist's names (a new array whenever a layer changed) while each name
  // still finds the tool it found.
  const found = names.map((name) => view.source.get(name));
  const last = shown.get(names);
  if (last !== undefined && last.found.every((tool, i) => tool === found[i])) return last.tools;
  const tools: ModelTool[] = [];
  for (const tool of found) if (tool) tools.push(toolSchema('gemini', tool) as ModelTool);
  const frozen = Object.freeze(tools);
  shown.set(names, { found, tools: frozen });
  return frozen;
}
const shown = new WeakMap<
  readonly string[],
  { readonly found: readonly (Tool | undefined)[]; readonly tools: readonly ModelTool[] }
>();

export function costOf(settings: RunnerSettings, name: string): number {
  const cost = settings.costOf(canonical(name));
  if (typeof cost !== 'number' || !Number.isFinite(cost) || cost < 0)
    throw new TypeError(`costOf(${JSON.stringify(name)}) must return a finite number >= 0, got ${describe(cost)}`);
  return cost;
}

/**
 * Charges the store's tally of the run (atomic, shared by every continuation of one state) and then the
 * run's own. Returns the cap the charge would pass, in which case nothing is charged.
 */
async function spend(settings: RunnerSettings, run: Run, add: RunSpend, limits: Limits): Promise<BudgetCap | null> {
  const { iterations, attempts, cost } = run.tally;
  const verdict = await settings.stores.tallies.spend(tallyKeyOf(run), add, limits, { iterations, attempts, cost });
  if (typeof verdict !== 'object' || verdict === null || (verdict.ok !== true && verdict.ok !== false))
    throw new TypeError(`the tally store's spend() answered ${describe(verdict)}`);
  if (!verdict.ok) return verdict.cap;
  run.tally.iterations += add.iterations;
  run.tally.attempts += add.attempts;
  run.tally.cost += add.cost;
  return null;
}

/** Charges one model turn; the cap it would pass, or null. */
export function chargeTurn(settings: RunnerSettings, run: Run, limits: Limits): Promise<BudgetCap | null> {
  return spend(settings, run, TURN, limits);
}

/** Why a call a cap stopped is refused (it ends the run). */
/** Why a delegation past the runner's `maxDepth` is refused (at its charge, and on resume). */
export function depthCapReason(max: number, tool: string): string {
  return `delegation is capped at depth ${max}; ${JSON.stringify(tool)} would nest deeper`;
}

function capReason(cap: BudgetCap, limits: Limits): string {
  const limit =
    cap === 'maxToolCalls' ? limits.maxToolCalls : cap === 'maxCost' ? limits.maxCost : limits.maxIterations;
  return `the run's ${cap} (${limit}) is spent; the run ends here`;
}

/** How a pass over a turn ended, beyond its calls' results. */
export type PassEnd =
  | { readonly kind: 'failed'; readonly error: ToolNotPermittedError }
  | { readonly kind: 'cap'; readonly cap: BudgetCap }
  | { readonly kind: 'loop'; readonly decision: DenyDecision }
  | { readonly kind: 'delegated'; readonly call: RunToolCall; readonly inner: Frame; readonly outcome: FrameOutcome };

/**
 * The run's Route for one pass over a turn (the calls not yet done). After a delegation the pass ends
 * (`Halted`): the peer may have spent budget, and the tenant plan, policy or registry may have changed while
 * it ran, so the runner dispatches the rest of the turn again.
 */
export class RunRoute implements Route, RoutePerson, RouteMeter, RouteObserver {
  readonly name = 'runner';
  readonly grouped = false;
  /** Durable approvals as the run's person (this route: `ask`, `announced`). */
  readonly person: RoutePerson = this;
  /** The run's projected caps before anyone is asked, then the store's tally and the depth cap (`admit`, `charge`). */
  readonly meter: RouteMeter = this;
  /** Run events, refusal loops, `onRefusal: 'fail'` (`endsBatch`, `decided`). */
  readonly observe: RouteObserver = this;
  /** The person's approval settings: the runner's secret and approval TTL. */
  readonly approvals: ApprovalSettings;
  /** What ended the pass early, if anything. */
  end: PassEnd | null = null;
  readonly #host: RouteHost;
  readonly #settings: RunnerSettings;
  readonly #run: Run;
  readonly #frame: Frame;
  readonly #turn: Turn;
  readonly #calls: readonly RunToolCall[];
  #view: FrameView;
  #projectedAttempts = 0;
  #projectedCost = 0;
  readonly #charged = new Set<number>();
  /** Made at the first ask (most passes ask nobody). */
  #pending: Map<string, PendingApproval> | null = null;
  #use: GrantUse | null = null;

  constructor(host: RouteHost, run: Run, frame: Frame, turn: Turn, calls: readonly RunToolCall[], view: FrameView) {
    this.#host = host;
    this.#settings = host.settings;
    this.approvals = host.person;
    this.#run = run;
    this.#frame = frame;
    this.#turn = turn;
    this.#calls = calls;
    this.#view = view;
  }

  get context(): GateContext {
    return this.#view.context;
  }

  /**
   * Before a call that waited runs (an earlier call, an approval): the tenant's plan read again from its
   * provider and the registry as it stands now, so a plan cut during the turn applies to the calls after it.
   */
  async refresh(): Promise<GateContext> {
    this.#view = viewOf(this.#settings, this.#run, this.#frame, await limitsOf(this.#settings, this.#run.tenant));
    return this.#view.context;
  }

  /** The approvals the pass left pending, in call order. */
  pendingOf(results: readonly DispatchResult[]): readonly PendingApproval[] {
    let out: PendingApproval[] | null = null;
    for (const result of results) {
      if (!('status' in result) || result.status !== 'pending') continue;
      const approval = this.#pending?.get(result.callId);
      if (!approval) throw new TypeError('toolgate internal error: a pending call without its approval');
      (out ??= []).push(approval);
    }
    return out ?? NO_PENDING;
  }

  /** A call that would pass a cap is stopped before any handler is asked about it (uncharged; it ends the run). */
  admit({ call }: Candidate): Refusal | null {
    const limits = this.#view.limits;
    const cost = costOf(this.#settings, call.name);
    const attempts = this.#run.tally.attempts + this.#projectedAttempts + 1;
    const spent = this.#run.tally.cost + this.#projectedCost + cost;
    const cap: BudgetCap | null =
      attempts > limits.maxToolCalls ? 'maxToolCalls' : spent > limits.maxCost ? 'maxCost' : null;
    if (cap !== null) {
      this.end = { kind: 'cap', cap };
      return { stage: 'budget', reason: capReason(cap, limits), halt: true };
    }
    this.#projectedAttempts++;
    this.#projectedCost += cost;
    return null;
  }

  ask(request: ApprovalRequest): Promise<AskOutcome | null> {
    return this.#host.approvals.person(
      this.#run,
      this.#frame,
      this.#turn,
      request,
      this.#view.source,
      this.#grantUse(),
    );
  }

  /** What the person records of this pass: the answers given on resume it applied, the requests left pending. */
  #grantUse(): GrantUse {
    if (this.#use === null) {
      const pending = (this.#pending = new Map());
      this.#use = {
        applied: new Map(),
        pending(approval) {
          pending.set(approval.binding.callId, approval);
        },
      };
    }
    return this.#use;
  }

  /** A decision given on resume was put to the run's person when the run paused: the ask was announced then. */
  announced(request: ApprovalRequest): boolean {
    return this.#frame.granted.has(request.binding.callId);
  }

  /** Step 6: the store's tally (a cap ends the run), then the depth cap of a delegation. */
  async charge({ index, call, decision }: Attempt): Promise<Refusal | null> {
    const limits = this.#view.limits;
    const cap = await spend(this.#settings, this.#run, attemptOf(costOf(this.#settings, call.name)), limits);
    if (cap !== null) {
      this.end = { kind: 'cap', cap };
      return { stage: 'budget', reason: capReason(cap, limits), halt: true };
    }
    this.#charged.add(index);
    // A call refused although a decision was given on resume for it (an allowlist cut while it waited, a
    // deny, an approval that does not bind): its refusal is settled in the ledger, so a replay of the state
    // with that decision (or another one for the same approval) answers with it and runs nothing.
    if (decision.effect === 'deny' && this.#frame.granted.has(call.id)) await this.#settleRefused(call.id, decision);
    const max = this.#settings.maxDepth;
    if (decision.effect === 'allow' && this.#frame.depth + 1 > max && this.#peerOf(decision.canonical) !== undefined)
      return {
        stage: 'depth',
        reason: depthCapReason(max, decision.tool),
      };
    return null;
  }

  /** `onRefusal: 'fail'`: an allowlist refusal ends the run before anything of the turn runs. */
  endsBatch(decision: Decision): boolean {
    return this.#settings.onRefusal === 'fail' && isAllowlistRefusal(decision);
  }

  /** Step 8 for the run: recorded, run events, refusals counted; true ends the pass (a refusal loop). */
  decided(decision: Decision, { index }: Attempt): boolean {
    const run = this.#run;
    const frame = this.#frame;
    const call = this.#calls[index]!;
    const error = isAllowlistRefusal(decision)
      ? new ToolNotPermittedError({
          tool: decision.tool,
          agent: decision.agent,
          reason: decision.layer,
          permitted: this.#permitted(),
        })
      : null;
    const events = this.#host.events;
    this.#host.approvals.resolved(run, frame, call.id, decision, this.#use ?? NO_USE);
    run.decisions.push(decision);
    if (events.size > 0) {
      emitRun(events, run, frame, { type: 'tool_decided', decision });
      if (decision.effect === 'deny') emitRun(events, run, frame, { type: 'tool_refused', decision, error });
    }
    if ((decision.asked === 'runner' || decision.asked === 'registry') && decision.by === 'handler')
      (this.#turn.answered ??= new Map()).set(call.id, {
        binding: answerBinding(decision),
        under: underOf(decision, this.#view.source),
        effect: decision.effect,
      });
    if (decision.effect === 'allow' || !this.#charged.has(index)) return false;
    run.tally.refusals++;
    if (error !== null && this.endsBatch(decision)) {
      this.end = { kind: 'failed', error };
      return true;
    }
    const key = hashOf([frame.agent, decision.canonical, decision.parameters ?? call.arguments ?? null]);
    const times = (run.loops.get(key) ?? 0) + 1;
    run.loops.set(key, times);
    if (times < this.#settings.loopLimit) return false;
    this.end = { kind: 'loop', decision };
    return true;
  }

  /**
   * Step 7 for the run: at most once per ledger key (a call claimed by an earlier continuation is answered
   * from the ledger), and a delegation runs its peer's frame instead of a tool.
   */
  async execute(
    decided: DecidedCall,
    _signal: AbortSignal | undefined,
    proceed: () => Promise<ToolResult>,
  ): Promise<ToolResult | Halted> {
    const run = this.#run;
    const frame = this.#frame;
    const turn = this.#turn;
    const call = this.#calls[decided.index]!;
    const key = ledgerKeyOf(run, frame, turn, call.id);
    const ledger = this.#settings.ledger;
    const prior = await ledger.claim(key, run.signal);
    if (prior) {
      answerFromLedger(turn, call, prior);
      return answeredResult(turn, call, decided);
    }
    // Allowed by a decision given on resume: its nonce is used up now, together with the ledger claim.
    const granted = this.#use?.applied.get(call.id)?.problem === null ? frame.granted.get(call.id) : undefined;
    if (granted && decided.decision.asked === 'runner' && !(await this.#host.approvals.useNonce(granted, key))) {
      const content = `Tool ${JSON.stringify(call.name)} was not run: the approval it was given was already used (replayed).`;
      await ledger.record(key, { content, isError: true });
      turn.done.set(call.id, toolMessage(call, content, true));
      return answeredResult(turn, call, decided);
    }
    const peer = this.#peerOf(decided.decision.canonical);
    if (peer !== undefined) {
      const inner = newFrame(
        peer,
        `${frame.key}/${turn.index}.${call.id}>${peer}`,
        frame.depth + 1,
        String(decided.args['input'] ?? ''),
      );
      run.frames.push(inner);
      turn.active = call.id;
      this.end = { kind: 'delegated', call, inner, outcome: await this.#host.runPeer(run, inner) };
      return { halted: true, result: null };
    }
    const result = await proceed();
    await ledger.record(key, { content: result.content, isError: result.isError });
    return result;
  }

  /** Settles the refusal of a call that had a decision given on resume (see `charge`). */
  async #settleRefused(callId: string, decision: Decision): Promise<void> {
    const key = ledgerKeyOf(this.#run, this.#frame, this.#turn, callId);
    const ledger = this.#settings.ledger;
    // Settled already (another continuation of the run got there first): that outcome stands.
    if ((await ledger.claim(key, this.#run.signal)) !== null) return;
    await this.#host.approvals.useNonce(this.#frame.granted.get(callId)!, key);
    await ledger.record(key, { content: refusalContent(decision as DenyDecision), isError: true });
  }

  #peerOf(form: string): string | undefined {
    return peersOf(this.#run, this.#frame.agent).agents.get(form);
  }

  #permitted(): readonly string[] {
    return this.#view.context.allowlist?.names ?? this.#settings.registry.allowlist(this.#view.context).names;
  }
}

/** The result of a call the turn answered without running it (from the ledger, or refused as replayed). */
function answeredResult(turn: Turn, call: RunToolCall, decided: DecidedCall): ToolResult {
  const message = turn.done.get(call.id)!;
  return {
    callId: call.id,
    tool: call.name,
    status: message.isError ? 'error' : 'ok',
    isError: message.isError,
    content: message.content,
    decision: decided.decision,
  };
}

/** One attempt's charge; the cost of 1 (the default `costOf`) is the same frozen object every time. */
function attemptOf(cost: number): RunSpend {
  return cost === 1 ? ATTEMPT : { ...NOTHING, attempts: 1, cost };
}
const ATTEMPT: RunSpend = Object.freeze({ ...NOTHING, attempts: 1, cost: 1 });

function peersOf(run: Run, agent: string): PeerTools {
  let entry = run.peerTools.get(agent);
  if (!entry) {
    const agents = new Map<string, string>();
    for (const name of run.agents[agent]?.peers ?? []) agents.set(canonical(peerToolName(name)), name);
    run.peerTools.set(agent, (entry = { tools: peerTools(run.agents, agent), agents, source: null }));
  }
  return entry;
}
