/**
 * THE path, steps 1–8, for every route (registry, runner, SDK adapters, MCP client and gateway):
 *
 *   phase 1, every call of the batch before any runs:
 *     1 find tool → 2 parse → snapshot → 3 validate → 4 allowlist → 5 policy  (precheck.ts; sync fast path)
 *     the route's admit; an ask → permission_asked → policy handler → route's person → registry handler → fallback
 *   phase 2, call by call in order, ONE order for every route (batch.ts, Batch.#step):
 *     stale? → re-judge → 6 meter → 8 announce → confirm → 7 execute
 *
 * One named fast path, {@link runAlone}: one call, no listener, no meter, no observer — nothing can change
 * between its decision and its execution, so it is decided and started without a microtask (sync schema, no
 * handler). Every other call runs in a Batch (batch.ts: phase 1 and the one phase-2 order); an ask is resolved
 * and a Decision announced by ask.ts. These three files are the only emitter of `tool_decided`,
 * `permission_asked` and `permission_denied`, and with precheck.ts and approval.ts the only place a Decision is
 * made (all by decisions.ts's one builder).
 */
import type { DispatchResult, GateContext, GateEnvironment, ToolResult } from '../contracts/gate.js';
import type { Route } from '../contracts/route.js';
import type { Decision, DecisionBase } from '../decision.js';
import type { NormalizedCall, UnreadableCall } from '../formats/index.js';
import { settingsSecret } from './approval.js';
import { announce, resolveCallAsk } from './ask.js';
import { Batch } from './batch.js';
import { execute, refused, settled } from './execute.js';
import { precheck, type Precheck } from './precheck.js';

export type { DispatchResult, NotRunResult, PendingResult } from '../contracts/gate.js';

type Call = NormalizedCall | UnreadableCall;

/** Runs a batch through the path on `route`; one result per call, in order. Never rejects for a bad call. */
export function dispatchCalls(
  calls: readonly Call[],
  context: GateContext,
  env: GateEnvironment,
  route: Route,
): Promise<DispatchResult[]> {
  if (route.person) settingsSecret(route.person.approvals);
  const first = calls.length === 1 ? runAlone(calls[0]!, context, env, route) : null;
  if (first !== null) return first;
  return new Batch(calls, context, env, route).run();
}

/**
 * {@link dispatchCalls} of one call, its one result: the same path (the fast one, else a Batch), without the array
 * around it nor the hop that makes one (the gateway's `tools/call`; issue 25.2).
 */
export function dispatchCall(
  call: Call,
  context: GateContext,
  env: GateEnvironment,
  route: Route,
): Promise<DispatchResult> {
  if (route.person) settingsSecret(route.person.approvals);
  return alone(call, context, env, route) ?? new Batch([call], context, env, route).run().then(first);
}

/**
 * One call through the path on a route that never leaves a call pending or not run (no person, no observer,
 * no meter of its own: the registry's), its ToolResult alone (what `invoke` and a one-call batch want). On the
 * fast path that is the execution's own promise, settled one hop after the tool's (none of ours between, no
 * array around it); else the Batch's first result (one of another status is an internal error).
 */
export function dispatchOwnCall(
  call: Call,
  context: GateContext,
  env: GateEnvironment,
  route: Route,
): Promise<ToolResult>;
export function dispatchOwnCall<R>(
  call: Call,
  context: GateContext,
  env: GateEnvironment,
  route: Route,
  shape: (result: ToolResult) => R,
): Promise<R>;
export function dispatchOwnCall(
  call: Call,
  context: GateContext,
  env: GateEnvironment,
  route: Route,
  shape: ((result: ToolResult) => unknown) | null = null,
): Promise<unknown> {
  if (route.person || route.observe || route.meter)
    throw new TypeError('toolgate internal error: dispatchOwnCall is for a route with no person, observer or meter');
  let pre: Precheck | Promise<Precheck> | undefined;
  // fastRoute(env, route), its route.meter and route.observe known false above (not a call of its own; issue 25).
  if (!route.execute && !env.meter && env.listening?.() === false) {
    pre = precheck(call, context, env);
    if (!(pre instanceof Promise) && pre.kind === 'decided') {
      const decision = pre.decision;
      if (decision.effect !== 'allow' || !pre.tool || !pre.args)
        return settled(refused(decision as Extract<Decision, { effect: 'deny' }>), shape);
      return shape === null
        ? execute(pre.tool, decision, pre.args, context, env, pre.keptTimeoutMs)
        : execute(pre.tool, decision, pre.args, context, env, pre.keptTimeoutMs, shape);
    }
  }
  // An async schema or an ask waits: the Batch takes the call from here, with what is already decided.
  const results = new Batch([call], context, env, route).run(pre);
  return shape === null ? results.then(firstOwn) : results.then((all) => shape(firstOwn(all)));
}

function first(results: DispatchResult[]): DispatchResult {
  return results[0]!;
}

function firstOwn(results: DispatchResult[]): ToolResult {
  return ownResult(results[0]!);
}

/** A result of a route that leaves nothing pending or not run. */
export function ownResult(result: DispatchResult): ToolResult {
  if (result.status === 'pending' || result.status === 'not_run')
    throw new Error(`toolgate internal error: the route produced a ${result.status} result`);
  return result;
}

/**
 * THE fast path: one call on a route with no meter, no observer and no `execute` of its own, in a registry
 * with no meter and no listener. Nothing can change between its decision and its execution (no wait, no
 * charge, nobody told), so there is nothing to judge again or confirm: decided (synchronously where the
 * schema is) and started at once. Null when the call does not qualify (the Batch runs it).
 */
function runAlone(
  call: Call,
  context: GateContext,
  env: GateEnvironment,
  route: Route,
): Promise<DispatchResult[]> | null {
  const running = alone(call, context, env, route);
  return running === null ? null : running.then(one);
}

/** Whether a call on this route, in this registry, may take the fast path. */
function fastRoute(env: GateEnvironment, route: Route): boolean {
  return !route.meter && !route.observe && !route.execute && !env.meter && env.listening?.() === false;
}

/** {@link runAlone}'s one result. */
function alone(call: Call, context: GateContext, env: GateEnvironment, route: Route): Promise<DispatchResult> | null {
  if (!fastRoute(env, route)) return null;
  const pre = precheck(call, context, env);
  // An async schema or an ask waits: the Batch takes the call from here, with what is already decided.
  if (pre instanceof Promise || pre.kind === 'ask') return new Batch([call], context, env, route).run(pre).then(first);
  return started(pre, context, env);
}

/** A call decided on the fast path: refused, or its tool started. */
function started(
  pre: Extract<Precheck, { kind: 'decided' }>,
  context: GateContext,
  env: GateEnvironment,
): Promise<ToolResult> {
  const decision = pre.decision;
  if (decision.effect !== 'allow' || !pre.tool || !pre.args)
    return Promise.resolve(refused(decision as Extract<Decision, { effect: 'deny' }>));
  return execute(pre.tool, decision, pre.args, context, env, pre.keptTimeoutMs);
}

function one(result: DispatchResult): DispatchResult[] {
  return [result];
}

/** Steps 1–5 and the ask for each call, announced (step 8) as if it ran, executing nothing. */
export async function decideCalls(
  calls: readonly Call[],
  context: GateContext,
  env: GateEnvironment,
  route: Route,
): Promise<Decision[]> {
  if (route.person) settingsSecret(route.person.approvals);
  const decisions: Decision[] = [];
  for (let index = 0; index < calls.length; index++) {
    const call = calls[index]!;
    const pre = await precheck(call, context, env);
    const decision =
      pre.kind === 'decided' ? pre.decision : (await resolveCallAsk(pre, call, context, env, route, false)).decision;
    announce(env, decision);
    route.observe?.decided?.(decision, { index, call, decision, tool: pre.tool, context });
    decisions.push(decision);
  }
  return decisions;
}

/**
 * Steps 1–5 without resolving an ask and without any event: what the gate would decide now (explain, and
 * an SDK deciding whether to put a call to a person before it executes it).
 */
export function previewCall(call: Call, context: GateContext, env: GateEnvironment): Precheck | Promise<Precheck> {
  return precheck(call, context, env);
}

export type { DecisionBase };
