/**
 * Phase 2 of THE path (dispatch.ts's header): a Batch decides every call (phase 1, asks resolved by ask.ts),
 * then takes them one by one through the ONE order for every route — stale? → re-judge → 6 meter → 8 announce
 * → confirm → 7 execute. Every batch of more than one call, and a call the fast path (dispatch.ts's runAlone)
 * cannot take (an async schema, an ask, a meter, an observer, a listener), runs here.
 */
import type {
  Attempt,
  DispatchResult,
  GateContext,
  GateEnvironment,
  NotRunResult,
  ToolResult,
} from '../contracts/gate.js';
import type { DecidedCall, Refusal, Route, RouteState } from '../contracts/route.js';
import type { Decision } from '../decision.js';
import type { NormalizedCall, UnreadableCall } from '../formats/index.js';
import { errorText } from '../permissions/handler.js';
import type { Tool } from '../tool.js';
import type { ApprovalRequest } from '../contracts/approval.js';
import { callBinding, sameBinding } from './approval.js';
import { announce, resolveCallAsk } from './ask.js';
import { executeDecided, Lanes, refused } from './execute.js';
import { allowlistAgain, deny, givenArguments, precheck, type Precheck } from './precheck.js';

type Call = NormalizedCall | UnreadableCall;

/** How many times a call announced as allowed is decided again because the registry changed meanwhile. */
const CONFIRM_ROUNDS = 3;

/** One call on its way through the path. */
interface Entry {
  readonly index: number;
  readonly call: Call;
  decision: Decision;
  tool: Tool | null;
  args: Readonly<Record<string, unknown>> | null;
  /** How many waits the dispatch had been through when this call was decided. */
  epoch: number;
  /** The registry revision it was decided under. */
  revision: number;
  /** The policy and registry handler it was decided (and an ask answered) under. */
  policy: GateEnvironment['policy'];
  handler: GateEnvironment['handler'];
  /** A person or handler allowed it (an ask): the answer stands for the same binding only. */
  answered: boolean;
  /** The context it was decided (and an ask answered) under: what its binding's owner and caller come from. */
  context: GateContext;
  pending: ApprovalRequest | null;
  /** False for a call a route's admit refused: it was never charged, and is not charged now. */
  charged: boolean;
  /** The batch ends after this call (a route's admit refused it with `halt`). */
  halts: boolean;
}

/**
 * A batch on its way: phase 1 decides every call, phase 2 takes them one by one through the one order. The
 * epoch counts the waits (an await that let anything else run); a call decided under an earlier epoch or
 * registry revision is stale and judged again before it is metered.
 */
export class Batch {
  readonly #calls: readonly Call[];
  readonly #context: GateContext;
  readonly #env: GateEnvironment;
  readonly #route: Route;
  readonly #entries: Entry[] = [];
  #epoch = 0;
  #halted = false;

  constructor(calls: readonly Call[], context: GateContext, env: GateEnvironment, route: Route) {
    this.#calls = calls;
    this.#context = context;
    this.#env = env;
    this.#route = route;
  }

  /** Phase 1, then phase 2; `first` is call 0's precheck when the fast path already ran it. */
  async run(first?: Precheck | Promise<Precheck>): Promise<DispatchResult[]> {
    const ended = await this.#decide(first);
    if (ended) return ended;
    const lanes = new Lanes(this.#route.grouped);
    const results: (DispatchResult | Promise<ToolResult>)[] = [];
    for (const e of this.#entries) await this.#step(e, lanes, results);
    for (let i = this.#entries.length; i < this.#calls.length; i++) results.push(notRun(this.#calls[i]!));
    return Promise.all(results);
  }

  /**
   * Phase 1: every call is decided before any runs, so a refusal late in the batch cannot follow a side
   * effect that an earlier approval prompt was shown without. The results when the batch ends here (a call
   * the route's observer ends it with; an ask left pending), else null.
   */
  async #decide(first: Precheck | Promise<Precheck> | undefined): Promise<DispatchResult[] | null> {
    const route = this.#route;
    const context = this.#context;
    const env = this.#env;
    let pending = false;
    for (let index = 0; index < this.#calls.length; index++) {
      const call = this.#calls[index]!;
      let pre = index === 0 && first !== undefined ? first : precheck(call, context, env);
      if (pre instanceof Promise) {
        pre = await pre;
        this.#epoch++;
      }
      const refusal = route.meter?.admit?.({ index, call }) ?? null;
      if (refusal) {
        // Stopped before anyone is asked: refused uncharged, announced in its place in phase 2.
        const decision = deny(
          pre.kind === 'ask' ? pre.base : pre.decision,
          { stage: refusal.stage, by: refusal.stage, layer: null },
          refusal.reason,
        );
        const e = this.#entry(index, call, decision, pre.tool, pre.args, env, context, false);
        e.charged = false;
        e.halts = refusal.halt === true;
        this.#entries.push(e);
        if (e.halts) break;
        continue;
      }
      if (pre.kind === 'decided') {
        this.#entries.push(this.#entry(index, call, pre.decision, pre.tool, pre.args, env, context, false));
        continue;
      }
      // Stamped with the epoch before the wait: whatever changed while it was answered is seen before it runs.
      const decidedAt = this.#epoch;
      const asked = await resolveCallAsk(pre, call, context, env, route, true);
      this.#epoch++;
      if (asked.pending !== null) pending = true;
      const e = this.#entry(index, call, asked.decision, asked.tool, asked.args, env, context, asked.answered);
      e.epoch = decidedAt;
      e.pending = asked.pending;
      this.#entries.push(e);
    }
    const endsBatch = route.observe?.endsBatch;
    const stop = endsBatch ? this.#entries.find((e) => endsBatch.call(route.observe, e.decision)) : undefined;
    if (stop) {
      // That call alone is charged, announced and refused; nothing of the batch runs.
      const results: DispatchResult[] = this.#calls.map(notRun);
      const state = { context, env };
      await this.#meter(stop, state);
      this.#announce(stop, state.env);
      if (stop.decision.effect === 'deny') results[stop.index] = refused(stop.decision);
      return results;
    }
    if (!pending) return null;
    // Nothing of the batch runs while part of it waits for a person; nothing is announced either (the calls
    // are decided again when the batch is dispatched again with the answers).
    return this.#calls.map((call, i): DispatchResult => {
      const request = this.#entries[i]?.pending;
      return request ? { status: 'pending', callId: call.id, tool: call.name, request } : notRun(call);
    });
  }

  /**
   * Phase 2 for one call, in ONE order for every route: stale? → re-judge → meter → announce → confirm →
   * execute. Its result goes to `results`: a running concurrency-safe call as its promise (the calls after it
   * start meanwhile).
   */
  async #step(e: Entry, lanes: Lanes, results: (DispatchResult | Promise<ToolResult>)[]): Promise<void> {
    if (this.#halted) {
      results.push(notRun(e.call));
      return;
    }
    let state: RouteState = { context: this.#context, env: this.#env };
    let waited = false;
    if (e.decision.effect === 'allow') {
      if (lanes.mustWait(e.tool!.metadata.concurrencySafe)) {
        await lanes.drain();
        this.#epoch++;
      }
      // stale? A call that had to wait (an earlier call, an approval, a delegation), that runs after a call
      // started before it (concurrency-safe calls together), or whose registry changed since it was decided,
      // is judged again under what is in force now (DESIGN: the call that runs is the call that was decided,
      // under the registry, policy and layers in force when it runs).
      if (e.epoch !== this.#epoch || this.#env.current().revision !== e.revision) {
        state = await this.#now();
        // re-judge: fully when the registry or the route's context changed, else the allowlist step, which
        // sees a layer array changed in place.
        if (state.env.revision !== e.revision || state.context !== this.#context) {
          await this.#decideAgain(e, state);
          waited = true;
        } else this.#allowlistAgain(e, state);
      }
    }
    // meter: refused calls count; a refusal denies at its stage, `halt` ends the batch after this call.
    const metered = await this.#meter(e, state);
    // announce: the registry's events, then the route's observer.
    const heard = this.#announce(e, state.env);
    // confirm: a wait, a charge or a listener told of the Decision may have changed what is in force (a
    // listener's kill switch, a layer cut in place): the call runs only if it is still allowed now.
    if (e.decision.effect === 'allow' && (waited || metered || heard)) state = await this.#confirm(e, state);
    if (e.halts) this.#halted = true;
    if (e.decision.effect !== 'allow' || !e.tool || !e.args)
      results.push(refused(e.decision as Extract<Decision, { effect: 'deny' }>));
    else await this.#execute(e, state, lanes, results);
  }

  /** The route's context and the registry as they stand now. */
  async #now(): Promise<RouteState> {
    const refresh = this.#route.refresh;
    return { context: refresh ? await refresh.call(this.#route) : this.#context, env: this.#env.current() };
  }

  /**
   * Step 6: the route's meter, then the registry's own (its Limiter, as it stands now: one set during the batch
   * charges the calls after it). True when anything was charged (a charge may have awaited).
   */
  async #meter(e: Entry, state: RouteState): Promise<boolean> {
    if (!e.charged) return false;
    const routeMeter = this.#route.meter;
    const registryMeter = state.env.current().meter;
    if (!routeMeter && !registryMeter) return false;
    // The route's refusal is the call's Decision (a run's cap ends the run whatever the call was); the
    // registry's refuses only a call still allowed (a refused call keeps the refusal it had, and counts).
    if (routeMeter) this.#refuse(e, await charged(() => routeMeter.charge(this.#attempt(e, state.context))), true);
    if (registryMeter)
      this.#refuse(e, await charged(() => registryMeter.charge(this.#attempt(e, state.context))), false);
    return true;
  }

  #refuse(e: Entry, refusal: Refusal | null, always: boolean): void {
    if (!refusal) return;
    if (refusal.halt === true) e.halts = true;
    if (always || e.decision.effect === 'allow')
      e.decision = deny(e.decision, { stage: refusal.stage, by: refusal.stage, layer: null }, refusal.reason);
  }

  /** Step 8 for one call: the registry's events, then the route. True when anyone may have heard it. */
  #announce(e: Entry, env: GateEnvironment): boolean {
    announce(env, e.decision);
    const decided = this.#route.observe?.decided;
    if (decided && decided.call(this.#route.observe, e.decision, this.#attempt(e, e.context)) === true)
      this.#halted = true;
    return decided !== undefined || env.listening?.() !== false;
  }

  /**
   * After an allowed call was metered and announced: decided again when the registry changed since it was
   * decided, else its allowlist step again (a layer cut in place), under the route's context read again at
   * every round (a re-decision may have waited for a person). A changed Decision is announced in turn; a
   * registry that changes again at each announcement refuses the call. The state the call runs under.
   */
  async #confirm(e: Entry, from: RouteState): Promise<RouteState> {
    let state = from;
    for (let round = 0; e.decision.effect === 'allow'; round++) {
      const before = e.decision;
      if (this.#route.refresh) state = await this.#now();
      const now = state.env.current();
      if (now.revision !== e.revision) {
        if (round >= CONFIRM_ROUNDS) {
          e.decision = deny(
            before,
            { stage: 'policy', by: 'rule_error', layer: null },
            'the registry changed again each time the call was announced, so it is not run',
          );
          e.answered = false;
        } else {
          if (!this.#route.refresh) state = { context: state.context, env: now };
          await this.#decideAgain(e, state);
        }
      } else this.#allowlistAgain(e, state);
      if (e.decision === before) break;
      this.#announce(e, state.env);
    }
    return state;
  }

  /** Step 7: the route's own execute around the gate's, or the gate's alone, grouped or one at a time. */
  async #execute(
    e: Entry,
    state: RouteState,
    lanes: Lanes,
    results: (DispatchResult | Promise<ToolResult>)[],
  ): Promise<void> {
    const decided: DecidedCall = {
      index: e.index,
      call: e.call as NormalizedCall,
      decision: e.decision as DecidedCall['decision'],
      tool: e.tool!,
      args: e.args!,
    };
    const execute = this.#route.execute;
    if (execute) {
      // The route runs its calls one at a time, around the gate's own execution.
      const proceed = (): Promise<ToolResult> => executeDecided(decided, state.context, state.env);
      const outcome = await execute.call(this.#route, decided, state.context.signal, proceed);
      this.#epoch++;
      if ('halted' in outcome) {
        this.#halted = true;
        results.push(outcome.result ?? notRun(e.call));
      } else results.push(outcome);
      return;
    }
    const running = executeDecided(decided, state.context, state.env);
    // The call started and may already have run (a synchronous tool, its tool_executed listeners) or run on
    // while the next call is decided: the calls after it are judged again before they start.
    this.#epoch++;
    if (this.#route.grouped && decided.tool.metadata.concurrencySafe) {
      lanes.start(true, running);
      results.push(running);
    } else results.push(await running);
  }

  /** Step 4 again on the same context (a layer array changed in place): an answer no longer stands if it changed. */
  #allowlistAgain(e: Entry, state: RouteState): void {
    const before = e.decision;
    if ((e.decision = allowlistAgain(before, state.context, state.env)) !== before) e.answered = false;
  }

  /**
   * Decides a call again under `state` before it runs. A final Decision replaces the old one; an ask keeps
   * the earlier answer only if it still stands ({@link answerStands}), else it is asked again (and cannot be
   * left pending now: part of the batch may have run).
   */
  async #decideAgain(e: Entry, state: RouteState): Promise<void> {
    const call = e.call as NormalizedCall;
    // Validated again from the arguments it was given (edited ones included), not from its schema's output.
    let pre = precheck(
      { id: call.id, name: call.name, arguments: e.args && givenArguments(e.args), format: call.format },
      state.context,
      state.env,
    );
    if (pre instanceof Promise) pre = await pre;
    e.revision = state.env.revision;
    const kept = e.answered && answerStands(e, pre, state, this.#route);
    e.policy = state.env.policy;
    e.handler = state.env.handler;
    if (pre.kind === 'decided') {
      e.decision = pre.decision;
      e.tool = pre.tool;
      e.args = pre.args;
      e.answered = false;
      return;
    }
    if (kept) return;
    const asked = await resolveCallAsk(pre, call, state.context, state.env, this.#route, false);
    e.decision = asked.decision;
    e.tool = asked.tool;
    e.args = asked.args;
    e.answered = asked.answered;
    e.context = state.context;
  }

  #attempt(e: Entry, context: GateContext): Attempt {
    return { index: e.index, call: e.call, decision: e.decision, tool: e.tool, context };
  }

  #entry(
    index: number,
    call: Call,
    decision: Decision,
    tool: Tool | null,
    args: Readonly<Record<string, unknown>> | null,
    env: GateEnvironment,
    context: GateContext,
    answered: boolean,
  ): Entry {
    return {
      index,
      call,
      decision,
      tool,
      args,
      epoch: this.#epoch,
      revision: env.revision,
      policy: env.policy,
      handler: env.handler,
      answered,
      context,
      pending: null,
      charged: true,
      halts: false,
    };
  }
}

/** A meter's answer; a meter that throws refuses (fail closed), as a store that could not be asked. */
async function charged(charge: () => Refusal | null | Promise<Refusal | null>): Promise<Refusal | null> {
  try {
    return await charge();
  } catch (error) {
    return { stage: 'store', reason: `The call was not run: its meter could not be asked (${errorText(error)}).` };
  }
}

function notRun(call: Call): NotRunResult {
  return { status: 'not_run', callId: call.id, tool: call.name };
}

/**
 * An earlier answer stands for a call decided again only when the call is still an ask under the same tool,
 * policy and registry-handler objects (one swapped in may deny it now) and binds the same call: tool,
 * arguments, rule, policy version, owner, caller and tenant (the one `sameBinding`).
 */
function answerStands(e: Entry, pre: Precheck, state: RouteState, route: Route): boolean {
  if (pre.kind !== 'ask') return false;
  const env = state.env;
  if (e.tool !== pre.tool || e.policy !== env.policy || e.handler !== env.handler || e.args === null) return false;
  try {
    const settings = route.person?.approvals;
    const given = callBinding(e.decision, e.args, e.context, settings);
    return sameBinding(given, callBinding(pre.base, pre.args, state.context, settings)) === null;
  } catch {
    return false;
  }
}
