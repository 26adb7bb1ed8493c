/**
 * The route of a run: what the runner adds around the gate for each dispatch. Which allowlist (the root's
 * declaration ∩ tenant ∩ caller, narrowed at every delegation hop), which environment (the registry now,
 * plus the agent's `agent:<peer>` tools), how an attempt is charged (the store's tally, shared by every
 * continuation of the run), the depth cap, and how a delegation starts its peer's frame.
 */
import { ToolAllowlist } from '../allowlist.js';
import { toolsOfScopes } from '../config.js';
import { ToolNotPermittedError } from '../errors.js';
import type { Emitter } from '../events.js';
import type { Decision, DecisionBase, DenyDecision } from '../decision.js';
import { toolSchema } from '../formats/index.js';
import { deny, type GateContext, type GateEnvironment, type Precheck } from '../gate/precheck.js';
import { environmentOf as registryEnvironment } from '../gate/environment.js';
import { announceDecision } from '../gate/runner-bridge.js';
import { chargeLimits } from '../limits/charge.js';
import { canonical, describe } from '../names.js';
import type { RunSpend } from './approval-store.js';
import { peerTools, peerToolName } from './agents.js';
import type { Limits, RunnerSettings } from './options.js';
import {
  emitRun,
  isAllowlistRefusal,
  newFrame,
  type Decided,
  type Frame,
  type PeerTools,
  type Run,
  type Turn,
} from './run.js';
import type { BudgetCap, ModelTool, RunEvent, RunToolCall } from './types.js';

const NOTHING: RunSpend = { iterations: 0, attempts: 0, cost: 0 };

/** The allowlist of this dispatch: the root's declaration ∩ tenant ∩ caller, narrowed by each delegation hop. */
export function allowlistOf(settings: RunnerSettings, run: Run, frame: Frame, limits: Limits): ToolAllowlist {
  const root = run.agents[run.frames[0]!.agent]!;
  let list = ToolAllowlist.resolve(root.tools, {
    tenant: limits.tools,
    caller: callerNames(settings, run.caller.scopes),
    agent: root.name,
  });
  for (let i = 1; i <= frame.depth; i++) {
    const hop = run.frames[i]!.agent;
    list = list.narrowed(run.agents[hop]!.tools, { agent: hop });
  }
  return list;
}

/** The caller layer: scopes mapped through the runner's scope map, or taken as tool names without one. */
function callerNames(settings: RunnerSettings, scopes: readonly string[] | null): readonly string[] | null {
  if (scopes === null || settings.scopes === null) return scopes;
  return toolsOfScopes(settings.scopes, scopes);
}

/** The registry as it stands now, plus the `agent:<peer>` tools of this frame's agent. */
export function environmentOf(settings: RunnerSettings, run: Run, frame: Frame): GateEnvironment {
  const env = registryEnvironment(settings.registry);
  const peers = peersOf(run, frame.agent).tools;
  if (peers.size === 0) return env;
  return { ...env, lookup: (form) => peers.get(form) ?? env.lookup(form) };
}

export function contextOf(run: Run, frame: Frame, limits: Limits | null, allowlist: ToolAllowlist): GateContext {
  const context: GateContext = {
    agent: frame.agent,
    tenant: { id: run.tenant, tools: limits?.tools ?? null },
    caller: { ...(run.caller.id === null ? {} : { id: run.caller.id }), scopes: run.caller.scopes },
    allowlist,
    runId: run.runId,
  };
  return run.signal ? { ...context, signal: run.signal } : context;
}

/** What the model is shown: a projection of this turn's allowlist (a hidden tool called anyway is still refused). */
export function modelTools(allowlist: ToolAllowlist, env: GateEnvironment): ModelTool[] {
  const tools: ModelTool[] = [];
  for (const name of allowlist.names) {
    const tool = env.lookup(canonical(name));
    if (tool) tools.push(toolSchema('gemini', tool) as ModelTool);
  }
  return tools;
}

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
  const verdict = await settings.store.spend(run.runId, add, limits, { iterations, attempts, cost });
  if (typeof verdict !== 'object' || verdict === null || (verdict.ok !== true && verdict.ok !== false))
    throw new TypeError(`the approvals store's spend() answered ${describe(verdict)}`);
  if (!verdict.ok) return verdict.cap;
  run.tally.iterations += add.iterations;
  run.tally.attempts += add.attempts;
  run.tally.cost += add.cost;
  return null;
}

/**
 * Step 6 for limits: the registry's Limiter (shared across workers) is charged with this attempt, refused
 * ones included; an allowed call that does not fit is refused at stage `limit` (and spends nothing).
 */
export async function chargeLimit(
  settings: RunnerSettings,
  run: Run,
  frame: Frame,
  d: Extract<Decided, { kind: 'decided' }>,
): Promise<Decision> {
  const limiter = registryEnvironment(settings.registry).limiter;
  if (!limiter) return d.decision;
  const verdict = await chargeLimits(limiter, d.decision, d.tool, contextOf(run, frame, d.limits, d.allowlist));
  return !verdict.allowed && d.decision.effect === 'allow'
    ? deny(d.decision, { stage: 'limit', by: 'limit', layer: null }, verdict.reason)
    : d.decision;
}

/** Charges one model turn; the cap it would pass, or null. */
export function chargeTurn(settings: RunnerSettings, run: Run, limits: Limits): Promise<BudgetCap | null> {
  return spend(settings, run, { ...NOTHING, iterations: 1 }, limits);
}

/** Charges one attempt (refused calls count: `refused` adds to the refusals). The cap it would pass, or null. */
export async function chargeAttempt(
  settings: RunnerSettings,
  run: Run,
  call: RunToolCall,
  refused: boolean,
  limits: Limits,
): Promise<BudgetCap | null> {
  const cap = await spend(settings, run, { ...NOTHING, attempts: 1, cost: costOf(settings, call.name) }, limits);
  if (cap === null && refused) run.tally.refusals++;
  return cap;
}

/** The cap a call would pass if `projected` attempts and cost went before it in this turn (no handler is asked past a cap). */
export function projectedCap(
  run: Run,
  limits: Limits,
  projected: { readonly attempts: number; readonly cost: number },
): BudgetCap | null {
  if (run.tally.attempts + projected.attempts > limits.maxToolCalls) return 'maxToolCalls';
  if (run.tally.cost + projected.cost > limits.maxCost) return 'maxCost';
  return null;
}

/** The Decision of a call a cap stopped: it ends the run, and it is no attempt (nothing was charged). */
export function budgetRefusal(base: DecisionBase, cap: BudgetCap, limits: Limits): DenyDecision {
  const limit =
    cap === 'maxToolCalls' ? limits.maxToolCalls : cap === 'maxCost' ? limits.maxCost : limits.maxIterations;
  return deny(
    base,
    { stage: 'budget', by: 'budget', layer: null },
    `the run's ${cap} (${limit}) is spent; the run ends here`,
  );
}

/**
 * Step 8 for one call: the Decision recorded, given to the registry's listeners and emitted as run
 * events. Returns the ToolNotPermittedError of an allowlist refusal (what a failed run reports).
 */
export function announce(
  settings: RunnerSettings,
  events: Emitter<RunEvent>,
  run: Run,
  frame: Frame,
  decision: Decision,
  allowlist: ToolAllowlist | null,
): ToolNotPermittedError | null {
  const error =
    allowlist !== null && isAllowlistRefusal(decision)
      ? new ToolNotPermittedError({
          tool: decision.tool,
          agent: decision.agent,
          reason: decision.layer,
          permitted: allowlist.names,
        })
      : null;
  run.decisions.push(decision);
  announceDecision(registryEnvironment(settings.registry), decision);
  emitRun(events, run, frame, { type: 'tool_decided', decision });
  if (decision.effect === 'deny') emitRun(events, run, frame, { type: 'tool_refused', decision, error });
  return error;
}

/** A delegation past the depth cap is refused at its own stage (a cycle of peers ends here); the run goes on. */
export function depthCheck(settings: RunnerSettings, run: Run, frame: Frame, decision: Decision): Decision {
  if (
    decision.effect !== 'allow' ||
    peerOf(run, frame, decision.canonical) === undefined ||
    frame.depth + 1 <= settings.maxDepth
  )
    return decision;
  return deny(
    baseOf(decision),
    { stage: 'depth', by: 'depth', layer: null },
    `delegation is capped at depth ${settings.maxDepth}; ${JSON.stringify(decision.tool)} would nest deeper`,
  );
}

/** The peer agent an `agent:<name>` tool of this frame stands for, or undefined for an ordinary tool. */
export function peerOf(run: Run, frame: Frame, form: string): string | undefined {
  return peersOf(run, frame.agent).agents.get(form);
}

/** Pushes the frame of a delegation's peer (the call was decided, charged and claimed). */
export function delegate(run: Run, frame: Frame, turn: Turn, call: RunToolCall, peer: string, input: string): Frame {
  const inner = newFrame(peer, `${frame.key}/${turn.index}.${call.id}>${peer}`, frame.depth + 1, input);
  run.frames.push(inner);
  turn.active = call.id;
  return inner;
}

function peersOf(run: Run, agent: string): PeerTools {
  let entry = run.peerTools.get(agent);
  if (!entry) {
    const agents = new Map<string, string>();
    for (const name of run.agents[agent]?.peers ?? []) agents.set(canonical(peerToolName(name)), name);
    run.peerTools.set(agent, (entry = { tools: peerTools(run.agents, agent), agents }));
  }
  return entry;
}

/** The DecisionBase of a precheck or a Decision, for a Decision that replaces it. */
export function baseOf(pre: Precheck | Decision): DecisionBase {
  if ('kind' in pre && pre.kind === 'ask') return pre.base;
  const d = 'kind' in pre ? pre.decision : pre;
  return {
    callId: d.callId,
    tool: d.tool,
    canonical: d.canonical,
    agent: d.agent,
    tenant: d.tenant,
    runId: d.runId,
    parameters: d.parameters,
    rule: d.rule,
    reason: d.reason,
    asked: d.asked,
    policyVersion: d.policyVersion,
  };
}
