/**
 * THE path, steps 1–8, for every route (registry, runner, SDK adapters, MCP client and gateway):
 *
 *   phase 1, every call of the batch before any runs:
 *     1 find tool → 2 parse → snapshot → 3 validate → 4 allowlist → 5 policy  (precheck.ts; sync fast path)
 *     ask → permission_asked → policy handler → route's person → registry handler → fallback  (approval.ts)
 *   phase 2, call by call in order:
 *     judged again if it had to wait, or (calls announced together) the registry changed since: decided again
 *     when the registry or the route's context changed, else its allowlist step again (layers changed in place)
 *     and, once charged and announced (or judged again and announced, without a charge step), confirmed
 *     6 charge (route.charge; refused calls count) → 8 tool_decided / permission_denied → 7 execute (execute.ts)
 *
 * This file is the only emitter of `tool_decided`, `permission_asked` and `permission_denied`, and with
 * precheck.ts and approval.ts the only place a Decision is made. A call with a synchronous schema and no
 * handler is decided without a microtask.
 */
import type { Decision, DecisionBase } from '../decision.js';
import type { NormalizedCall, UnreadableCall } from '../formats/index.js';
import type { ToolResult } from '../registry.js';
import type { Tool } from '../tool.js';
import { chargeLimits } from '../limits/charge.js';
import { callBinding, resolveAsk, sameBinding, settingsSecret, type ApprovalRequest } from './approval.js';
import { executeDecided, Lanes, refused } from './execute.js';
import {
  allow,
  allowlistAgain,
  deny,
  givenArguments,
  precheck,
  type GateContext,
  type GateEnvironment,
  type Precheck,
} from './precheck.js';
import type { Attempt, DecidedCall, Route, RouteState } from './route.js';

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
 * `pending`, or that charges (`halt`) or ends batches (`endsBatch`); the registry's own route never sees them.
 */
export type DispatchResult = ToolResult | PendingResult | NotRunResult;

type Ask = Extract<Precheck, { kind: 'ask' }>;

const NONE: readonly NotRunResult[] = Object.freeze([]);

/** One call on its way through the path. */
interface Entry {
  readonly index: number;
  readonly call: NormalizedCall | UnreadableCall;
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

/** Runs a batch through the path on `route`; one result per call, in order. Never rejects for a bad call. */
export async function dispatchCalls(
  calls: readonly (NormalizedCall | UnreadableCall)[],
  context: GateContext,
  env: GateEnvironment,
  route: Route,
): Promise<DispatchResult[]> {
  if (route.ask) settingsSecret(route.approvals);
  const entries: Entry[] = [];
  let epoch = 0;
  // Phase 1: every call is decided before any runs, so a refusal late in the batch cannot follow a side
  // effect that an earlier approval prompt was shown without.
  let pending = false;
  for (let index = 0; index < calls.length; index++) {
    const call = calls[index]!;
    let pre = precheck(call, context, env);
    if (pre instanceof Promise) {
      pre = await pre;
      epoch++;
    }
    if (route.admit) {
      const refusal = route.admit({ index, call });
      if (refusal) {
        // Stopped before anyone is asked: refused uncharged, announced in its place in phase 2.
        const decision = deny(
          pre.kind === 'ask' ? pre.base : pre.decision,
          { stage: refusal.stage, by: refusal.stage, layer: null },
          refusal.reason,
        );
        const e = entryOf(index, call, decision, pre.tool, pre.args, epoch, env, context, false);
        e.charged = false;
        e.halts = refusal.halt === true;
        entries.push(e);
        if (e.halts) break;
        continue;
      }
    }
    if (pre.kind === 'decided') {
      entries.push(entryOf(index, call, pre.decision, pre.tool, pre.args, epoch, env, context, false));
      continue;
    }
    // Stamped with the epoch before the wait: whatever changed while it was answered is seen before it runs.
    const decidedAt = epoch;
    const asked = await resolveCallAsk(pre, call, context, env, route, true);
    epoch++;
    if (asked.pending) pending = true;
    entries.push(asked.entry(index, decidedAt, env));
  }
  // Calls after a halting admit were never decided: they do not run.
  const undecided: readonly NotRunResult[] =
    entries.length === calls.length
      ? NONE
      : calls.slice(entries.length).map((call) => ({ status: 'not_run', callId: call.id, tool: call.name }));

  if (route.endsBatch) {
    const stop = entries.find((e) => route.endsBatch!(e.decision));
    if (stop) {
      const results: DispatchResult[] = calls.map((call) => ({ status: 'not_run', callId: call.id, tool: call.name }));
      results[stop.index] = (await conclude(stop, route, env, context)) ?? results[stop.index]!;
      return results;
    }
  }
  if (pending) {
    // Nothing of the batch runs while part of it waits for a person; nothing is announced either (the
    // calls are decided again when the batch is dispatched again with the answers).
    return [
      ...entries.map((e): DispatchResult =>
        e.pending
          ? { status: 'pending', callId: e.call.id, tool: e.call.name, request: e.pending }
          : { status: 'not_run', callId: e.call.id, tool: e.call.name },
      ),
      ...undecided,
    ];
  }

  // Without a charge step nothing can change a Decision between here and execution but a re-decision, so
  // every Decision is announced before any call runs (a listener sees the whole batch's verdicts first); a
  // call decided again after a wait announces its new Decision then. With a charge step (the runner), each
  // call is charged, then announced, then run.
  const early = route.charge === undefined && !env.limiter;
  if (early) {
    // A listener told of the Decisions may change what is in force (a layer cut in place, a kill switch):
    // then every call is judged again before it runs, the first one too.
    const heard = route.decided !== undefined || env.listening?.() !== false;
    for (const e of entries) tell(env, route, e);
    if (heard) epoch++;
  }

  // Phase 2: call by call in order.
  const lanes = new Lanes(route.grouped);
  const results: (DispatchResult | Promise<ToolResult>)[] = [];
  let halted = false;
  for (const e of entries) {
    if (halted) {
      results.push({ status: 'not_run', callId: e.call.id, tool: e.call.name });
      continue;
    }
    let runContext = context;
    let runEnv = env;
    let chargedLate = false;
    if (e.decision.effect === 'allow') {
      if (lanes.mustWait(e.tool!.metadata.concurrencySafe)) {
        await lanes.drain();
        epoch++;
      }
      // A call that had to wait (an earlier call, an approval, a delegation) or ran after a call that started
      // before it (concurrency-safe calls together), or whose announcement was followed by a change of the
      // registry (a listener), is judged again under what is in force now (DESIGN:
      // the call that runs is the call that was decided, under the registry, policy and layers in force when
      // it runs): fully when the registry or the route's context changed, else the allowlist step, which
      // sees a layer array changed in place.
      if (e.epoch !== epoch || env.current().revision !== e.revision) {
        const state: RouteState = route.refresh ? await route.refresh() : { context, env: env.current() };
        runContext = state.context;
        runEnv = state.env;
        const before = e.decision;
        const full = state.env.revision !== e.revision || state.context !== context;
        if (full) await decideAgain(e, state, route);
        else if ((e.decision = allowlistAgain(before, state.context, state.env)) !== before) e.answered = false;
        if (early && e.decision !== before) tell(runEnv, route, e);
        // A limiter set since the batch started (it had none: its calls were announced uncharged) charges the
        // calls decided again after it (one refused now too, as conclude() charges every attempt).
        if (early && full && runEnv.limiter && e.charged) {
          await chargeLimiter(e, runEnv, runContext, route);
          chargedLate = true;
        }
        if (early && full && e.decision.effect === 'allow') {
          // The re-decision (or the charge) may have waited (a person asked again) and was told to listeners:
          // the call runs only if it is still allowed under what is in force now, as a charged call is
          // confirmed. (The allowlist step alone neither waits nor announces an allow.)
          const now = await confirm(e, route, runEnv, runContext, (halt) => (halted = halt));
          runContext = now.context;
          runEnv = now.env;
        }
      }
    }
    // A call refused in phase 1, when such a limiter has been set since: refused calls count, as on the
    // charging path.
    if (early && !chargedLate && e.decision.effect !== 'allow' && e.charged) {
      const now = env.current();
      if (now.limiter) await chargeLimiter(e, now, runContext);
    }
    const concluded: ToolResult | null = early
      ? e.decision.effect === 'allow' && e.tool && e.args
        ? null
        : refused(e.decision as Extract<Decision, { effect: 'deny' }>)
      : await conclude(e, route, runEnv, runContext, (halt) => (halted = halt));
    if (concluded === null && !early) {
      // Charging awaited (the route's store, the limiter) and the Decision was just told to listeners: a
      // listener or anything that ran meanwhile (a concurrency-safe call started before this one) may have
      // changed the registry or cut a layer. The call runs only if it is still allowed under what is in force now.
      const now = await confirm(e, route, runEnv, runContext, (halt) => (halted = halt));
      runContext = now.context;
      runEnv = now.env;
    }
    if (concluded !== null || e.decision.effect !== 'allow') {
      results.push(concluded ?? refused(e.decision as Extract<Decision, { effect: 'deny' }>));
      if (e.halts) halted = true;
      continue;
    }
    if (e.halts) halted = true;
    const decided: DecidedCall = {
      index: e.index,
      call: e.call as NormalizedCall,
      decision: e.decision as DecidedCall['decision'],
      tool: e.tool!,
      args: e.args!,
    };
    if (route.execute) {
      // The route runs its calls one at a time, around the gate's own execution.
      const proceed = (): Promise<ToolResult> => executeDecided(decided, runContext, runEnv);
      const outcome = await route.execute(decided, runContext.signal, proceed);
      epoch++;
      if ('halted' in outcome) {
        results.push(outcome.result ?? { status: 'not_run', callId: e.call.id, tool: e.call.name });
        halted = true;
      } else results.push(outcome);
      continue;
    }
    const running = executeDecided(decided, runContext, runEnv);
    if (route.grouped && decided.tool.metadata.concurrencySafe) {
      lanes.start(true, running);
      results.push(running);
      // The call started and may already have run (a synchronous tool, its tool_executed listeners) or
      // run on while the next call is charged: the calls after it are judged again before they start.
      epoch++;
    } else {
      results.push(await running);
      epoch++;
    }
  }
  if (undecided !== NONE) results.push(...undecided);
  return Promise.all(results);
}

/** Steps 1–5 and the ask for each call, announced (step 8) as if it ran, executing nothing. */
export async function decideCalls(
  calls: readonly (NormalizedCall | UnreadableCall)[],
  context: GateContext,
  env: GateEnvironment,
  route: Route,
): Promise<Decision[]> {
  if (route.ask) settingsSecret(route.approvals);
  const decisions: Decision[] = [];
  for (let index = 0; index < calls.length; index++) {
    const call = calls[index]!;
    const pre = await precheck(call, context, env);
    const decision =
      pre.kind === 'decided' ? pre.decision : (await resolveCallAsk(pre, call, context, env, route, false)).decision;
    announce(env, decision);
    route.decided?.(decision, { index, call, decision });
    decisions.push(decision);
  }
  return decisions;
}

/**
 * Steps 1–5 without resolving an ask and without any event: what the gate would decide now (explain, and
 * an SDK deciding whether to put a call to a person before it executes it).
 */
export function previewCall(
  call: NormalizedCall | UnreadableCall,
  context: GateContext,
  env: GateEnvironment,
): Precheck | Promise<Precheck> {
  return precheck(call, context, env);
}

/**
 * Steps 6 and 8 for one call: charged, announced, and its refusal returned; null when it is allowed and
 * goes on to execute. `onHalt` learns whether a refusal ends the batch.
 */
async function conclude(
  e: Entry,
  route: Route,
  env: GateEnvironment,
  context: GateContext,
  onHalt?: (halt: boolean) => void,
): Promise<ToolResult | null> {
  if (route.charge && e.charged) {
    const attempt: Attempt = { index: e.index, call: e.call, decision: e.decision };
    let refusal = route.charge(attempt);
    if (refusal instanceof Promise) refusal = await refusal;
    if (refusal) {
      e.decision = deny(e.decision, { stage: refusal.stage, by: refusal.stage, layer: null }, refusal.reason);
      if (refusal.halt === true) onHalt?.(true);
    }
  }
  if (env.limiter && e.charged) await chargeLimiter(e, env, context);
  if (tell(env, route, e)) onHalt?.(true);
  if (e.decision.effect === 'allow' && e.tool && e.args) return null;
  return refused(e.decision as Extract<Decision, { effect: 'deny' }>);
}

/**
 * Step 6 against the registry's limiter: every attempt is charged, refused ones too; one that does not fit
 * spends nothing and is refused at stage `limit` (at stage `store` when the counter store failed). With `announceTo`, a call refused here (already announced as
 * allowed) is announced again with its refusal.
 */
async function chargeLimiter(e: Entry, env: GateEnvironment, context: GateContext, announceTo?: Route): Promise<void> {
  const verdict = await chargeLimits(env.limiter!, e.decision, e.tool, context);
  if (!verdict.allowed && e.decision.effect === 'allow') {
    e.decision = deny(e.decision, { stage: verdict.stage, by: verdict.stage, layer: null }, verdict.reason);
    if (announceTo) tell(env, announceTo, e);
  }
}

/** How many times a call announced as allowed is decided again because the registry changed meanwhile. */
const CONFIRM_ROUNDS = 3;

/**
 * After step 6 and 8 of an allowed call (a route that charges: the charge awaited, listeners were told): the
 * call decided again when the registry changed since it was decided, else its allowlist step again (a layer
 * cut in place); a changed Decision is announced in turn. A registry that changes again at each
 * announcement refuses the call. The state the call runs under.
 */
async function confirm(
  e: Entry,
  route: Route,
  env: GateEnvironment,
  context: GateContext,
  onHalt: (halt: boolean) => void,
): Promise<RouteState> {
  let state: RouteState = { context, env };
  for (let round = 0; e.decision.effect === 'allow'; round++) {
    const before = e.decision;
    // The route's context now, at every round (a re-decision may have waited for a person): a layer replaced
    // (the runner's tenant provider answering a new plan) or, below the runner's root, cut in place (a
    // resolved allowlist is a snapshot) shows only there.
    if (route.refresh) state = await route.refresh();
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
        if (!route.refresh) state = { context: state.context, env: now };
        await decideAgain(e, state, route);
      }
    } else if ((e.decision = allowlistAgain(before, state.context, state.env)) !== before) e.answered = false;
    if (e.decision === before) break;
    if (tell(state.env, route, e)) onHalt(true);
  }
  return state;
}

/** An ask, announced and resolved by the one precedence; edited arguments pass the gate again. */
async function resolveCallAsk(
  ask: Ask,
  call: NormalizedCall | UnreadableCall,
  context: GateContext,
  env: GateEnvironment,
  route: Route,
  mayPend: boolean,
): Promise<{
  readonly decision: Decision;
  readonly pending: boolean;
  entry(index: number, epoch: number, env: GateEnvironment): Entry;
}> {
  const resolution = await resolveAsk(ask, context, env, route, {
    pending: mayPend,
    announce: () => announceAsk(env, ask),
  });
  let decision: Decision;
  let tool: Tool | null = ask.tool;
  let args: Readonly<Record<string, unknown>> | null = ask.args;
  let request: ApprovalRequest | null = null;
  if (resolution.kind === 'pending') {
    request = resolution.request;
    decision = deny(
      { ...ask.base, asked: route.name },
      { stage: 'handler', by: 'handler', layer: null },
      `${ask.base.reason}; waiting for approval`,
    );
  } else if (resolution.kind === 'edited') {
    // An edited call is a new call: validation, allowlist and rules again. An ask on exactly these
    // arguments is what the person answered.
    const edited = await precheck(
      { id: call.id, name: call.name, arguments: resolution.arguments, format: call.format },
      context,
      env,
    );
    tool = edited.tool;
    args = edited.args;
    decision =
      edited.kind === 'decided'
        ? edited.decision
        : allow(
            { ...edited.base, asked: resolution.base.asked },
            'handler',
            `${edited.base.reason} (approved with edited arguments)`,
          );
  } else {
    decision = resolution.decision;
  }
  const answered = decision.effect === 'allow' && decision.asked !== null;
  return {
    decision,
    pending: request !== null,
    entry: (index, epoch, at) => entryOf(index, call, decision, tool, args, epoch, at, context, answered, request),
  };
}

/**
 * Decides a call again under `state` before it runs. A final Decision replaces the old one; an ask keeps
 * the earlier approval only for the same binding (tool, arguments, rule, policy version) under the same tool,
 * policy and handler objects, else it is asked again (and cannot be left pending now: part of the batch may
 * have run).
 */
async function decideAgain(e: Entry, state: RouteState, route: Route): Promise<void> {
  const call = e.call as NormalizedCall;
  // Validated again from the arguments it was given (edited ones included), not from its schema's output.
  let pre = previewCall(
    { id: call.id, name: call.name, arguments: e.args && givenArguments(e.args), format: call.format },
    state.context,
    state.env,
  );
  if (pre instanceof Promise) pre = await pre;
  e.revision = state.env.revision;
  const kept = e.answered && answerStands(e, pre, state, route);
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
  const asked = await resolveCallAsk(pre, call, state.context, state.env, route, false);
  const fresh = asked.entry(e.index, e.epoch, state.env);
  e.decision = fresh.decision;
  e.tool = fresh.tool;
  e.args = fresh.args;
  e.answered = fresh.answered;
  e.context = fresh.context;
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
    const given = callBinding(e.decision, e.args, e.context, route.approvals);
    return sameBinding(given, callBinding(pre.base, pre.args, state.context, route.approvals)) === null;
  } catch {
    return false;
  }
}

/** The `permission_asked` event of an ask. */
function announceAsk(env: GateEnvironment, ask: Ask): void {
  env.emit({
    type: 'permission_asked',
    tool: ask.tool.name,
    callId: ask.base.callId,
    reason: ask.request.reason,
    ruleName: ask.request.ruleName,
    parameters: ask.args,
  });
}

/** Step 8 for one call: the registry's events, then the route. True when the route ends the batch after it. */
function tell(env: GateEnvironment, route: Route, e: Entry): boolean {
  announce(env, e.decision);
  return route.decided?.(e.decision, { index: e.index, call: e.call, decision: e.decision }) === true;
}

/** The events of a final Decision. */
function announce(env: GateEnvironment, decision: Decision): void {
  if (decision.effect === 'deny') {
    env.emit({
      type: 'permission_denied',
      tool: decision.tool,
      callId: decision.callId,
      reason: decision.reason,
      ruleName: decision.rule,
      parameters: decision.parameters,
      decision,
    });
  }
  env.emit({ type: 'tool_decided', decision });
}

function entryOf(
  index: number,
  call: NormalizedCall | UnreadableCall,
  decision: Decision,
  tool: Tool | null,
  args: Readonly<Record<string, unknown>> | null,
  epoch: number,
  env: GateEnvironment,
  context: GateContext,
  answered: boolean,
  pending: ApprovalRequest | null = null,
): Entry {
  return {
    index,
    call,
    decision,
    tool,
    args,
    epoch,
    revision: env.revision,
    policy: env.policy,
    handler: env.handler,
    answered,
    context,
    pending,
    charged: true,
    halts: false,
  };
}

export type { DecisionBase };
