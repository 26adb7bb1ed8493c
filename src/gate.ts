/**
 * The one path every tool call takes, from every route:
 *
 *   1 find tool → 2 parse arguments → 3 validate → 4 allowlist (this dispatch) → 5 policy on the
 *   validated arguments (ask → handler) → [6 budget, in the runner] → 7 execute → 8 one Decision emitted
 *
 * Refusals are values. Everything that can fail on the way (a rule, a handler, a schema) fails closed.
 */
import type { AllowlistLayer, ToolAllowlist } from './allowlist.js';
import { allowlistRefusal, cachedAllowlist } from './allowlist-cache.js';
import type { AllowDecision, Decision, DecisionBase, DenyDecision } from './decision.js';
import type { RefusalLayer } from './errors.js';
import { parseArguments, type NormalizedCall, type UnreadableCall } from './formats/index.js';
import { canonical, describe } from './names.js';
import {
  callHandler,
  errorText,
  type AnyHandler,
  type PermissionHandler,
  type PermissionRequest,
} from './permissions/handler.js';
import type { PermissionPolicy, PolicyEvaluation } from './permissions/policy.js';
import type { PermissionResult } from './permissions/result.js';
import type { Tool } from './tool.js';

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

/** What the gate reads from the registry at each call (the registry is the only implementation). */
export interface GateEnvironment {
  lookup(form: string): Tool | undefined;
  /** The registered names in registration order; a new frozen array after each change. */
  registeredNames(): readonly string[];
  readonly policy: PermissionPolicy | null;
  readonly handler: PermissionHandler | null;
  /** What `ask` becomes when no handler is reachable. */
  readonly handlerFallback: PermissionResult;
  readonly handlerTimeoutMs: number;
}

/** A call that passed steps 1–4 and was evaluated by the policy (step 5), before any handler. */
export interface Evaluated {
  readonly tool: Tool;
  readonly args: Record<string, unknown>;
  readonly base: DecisionBase;
  readonly evaluation: PolicyEvaluation | null;
}

/** The outcome of steps 1–5 before an ask is resolved: a final Decision, or an ask for a handler. */
export type Precheck =
  | {
      readonly kind: 'decided';
      readonly decision: Decision;
      readonly tool: Tool | null;
      readonly args: Record<string, unknown> | null;
    }
  | {
      readonly kind: 'ask';
      readonly tool: Tool;
      readonly args: Record<string, unknown>;
      readonly base: DecisionBase;
      readonly request: PermissionRequest;
    };

/** The allowlist in force for this dispatch, as a list (what a model may be shown). */
export function allowlistFor(context: GateContext, env: GateEnvironment): ToolAllowlist {
  return cachedAllowlist(context, env, agentNameOf(context));
}

export function agentNameOf(context: GateContext): string {
  const agent = context.agent;
  if (typeof agent === 'string') return agent;
  if (agent && typeof agent.name === 'string') return agent.name;
  return context.allowlist?.agent ?? 'agent';
}

/**
 * Steps 1–5 for one call, synchronously where the schema is synchronous. Never executes anything and
 * never throws for bad input; throws only for a broken configuration (a colliding declaration).
 */
export function precheck(
  call: NormalizedCall | UnreadableCall,
  context: GateContext,
  env: GateEnvironment,
): Precheck | Promise<Precheck> {
  const form = canonical(call.name);
  const base: DecisionBase = {
    callId: call.id,
    tool: call.name,
    canonical: form,
    agent: agentNameOf(context),
    tenant: context.tenant?.id ?? null,
    runId: context.runId ?? null,
    parameters: null,
    rule: null,
    reason: '',
    asked: null,
    policyVersion: env.policy?.version ?? null,
  };
  if ('problem' in call)
    return decided(deny(base, { stage: 'arguments', by: 'malformed_call', layer: null }, call.problem), null, null);
  // 1 find tool
  const tool = env.lookup(form);
  if (!tool) {
    return decided(
      deny(
        base,
        { stage: 'lookup', by: 'unknown_tool', layer: 'not_declared' },
        `no tool named ${quote(call.name)} is registered`,
      ),
      null,
      null,
    );
  }
  // 2 parse arguments: malformed JSON is refused, never run as {}
  const parsed = parseArguments(call.arguments);
  if (!parsed.ok)
    return decided(
      deny(base, { stage: 'arguments', by: 'malformed_arguments', layer: null }, parsed.problem),
      tool,
      null,
    );
  // 3 validate against the tool's schema
  let validation;
  try {
    validation = tool.validate(parsed.value);
  } catch (error) {
    return decided(
      deny(
        base,
        { stage: 'validation', by: 'invalid_arguments', layer: null },
        `validating the arguments failed: ${errorText(error)}`,
      ),
      tool,
      null,
    );
  }
  if (validation instanceof Promise) {
    return validation.then(
      (result) => afterValidation(result, tool, base, context, env),
      (error: unknown) =>
        decided(
          deny(
            base,
            { stage: 'validation', by: 'invalid_arguments', layer: null },
            `validating the arguments failed: ${errorText(error)}`,
          ),
          tool,
          null,
        ),
    );
  }
  return afterValidation(validation, tool, base, context, env);
}

function afterValidation(
  validation: Awaited<ReturnType<Tool['validate']>>,
  tool: Tool,
  base: DecisionBase,
  context: GateContext,
  env: GateEnvironment,
): Precheck {
  if (!validation.ok) {
    return decided(
      deny(
        base,
        { stage: 'validation', by: 'invalid_arguments', layer: null },
        `the arguments do not match the schema of ${quote(tool.name)}: ${issueText(validation.issues)}`,
      ),
      tool,
      null,
    );
  }
  const args = validation.value;
  const withArgs: DecisionBase = { ...base, parameters: args };
  // 4 allowlist: this call's verdict under the dispatch's layers (src/allowlist-cache.ts)
  const layer = allowlistRefusal(context, env, base.canonical, base.tool, base.agent);
  if (layer !== null)
    return decided(
      deny(withArgs, { stage: 'allowlist', by: 'allowlist', layer }, refusalText(base.tool, base.agent, layer)),
      tool,
      args,
    );
  // 5 policy on the validated arguments
  const policy = env.policy;
  if (!policy) return decided(allow(withArgs, 'no_policy', 'no permission policy is set'), tool, args);
  const evaluation = policy.evaluate(tool, args);
  return fromEvaluation(evaluation, tool, args, withArgs);
}

/** Turns a policy evaluation into a final Decision or an ask. */
export function fromEvaluation(
  evaluation: PolicyEvaluation,
  tool: Tool,
  args: Record<string, unknown>,
  base: DecisionBase,
): Precheck {
  const rule = evaluation.rule?.name ?? null;
  const withRule: DecisionBase = { ...base, rule };
  if (evaluation.by === 'rule_error') {
    return decided(deny(withRule, { stage: 'policy', by: 'rule_error', layer: null }, evaluation.error), tool, args);
  }
  const reason = evaluation.rule
    ? evaluation.rule.reason
    : `no rule matched; the policy's fallback is ${evaluation.result}`;
  if (evaluation.result === 'allow') return decided(allow(withRule, evaluation.by, reason), tool, args);
  if (evaluation.result === 'deny')
    return decided(deny(withRule, { stage: 'policy', by: evaluation.by, layer: null }, reason), tool, args);
  const request: PermissionRequest = {
    toolName: tool.name,
    parameters: args,
    reason,
    ruleName: rule ?? '(fallback)',
    metadata: tool.metadata,
    callId: base.callId,
    agent: base.agent,
    tenant: base.tenant,
    runId: base.runId,
  };
  return { kind: 'ask', tool, args, base: { ...withRule, reason }, request };
}

/**
 * A handler a route adds to the chain, asked after the policy's own handler and before the registry's:
 * the runner's durable approvals, or an adapter's SDK approval flow (AI SDK tool approval, an Agents SDK
 * interruption, MCP elicitation), called with the same timeout and fail-closed rules.
 */
export interface AskRoute {
  readonly handler: AnyHandler | null;
  /** What the Decision records as `asked` when this handler is the one asked. */
  readonly asked: 'runner' | 'adapter';
  /** Accept `pending` from whichever handler is asked: the ask is then left open rather than denied. @default false */
  readonly pending?: boolean;
}

/** An ask a handler answered `pending`: no Decision yet; the route (the runner) pauses and asks later. */
export interface PendingAsk {
  readonly effect: 'pending';
  readonly base: DecisionBase;
  readonly request: PermissionRequest;
}

/**
 * Resolves an ask: the policy's handler, else the route's (the runner's), else the registry's, else the
 * registry's fallback. Any handler failure denies; `pending` is an answer only on a route that accepts it.
 */
export async function resolveAsk(ask: Extract<Precheck, { kind: 'ask' }>, env: GateEnvironment): Promise<Decision>;
export async function resolveAsk(
  ask: Extract<Precheck, { kind: 'ask' }>,
  env: GateEnvironment,
  route: AskRoute & { readonly pending: true },
): Promise<Decision | PendingAsk>;
export async function resolveAsk(
  ask: Extract<Precheck, { kind: 'ask' }>,
  env: GateEnvironment,
  route: AskRoute & { readonly pending?: false },
): Promise<Decision>;
export async function resolveAsk(
  ask: Extract<Precheck, { kind: 'ask' }>,
  env: GateEnvironment,
  route?: AskRoute,
): Promise<Decision | PendingAsk> {
  const chain: [AnyHandler | null, DecisionBase['asked']][] = [
    [env.policy?.handler ?? null, 'policy'],
    [route?.handler ?? null, route?.asked ?? null],
    [env.handler, 'registry'],
  ];
  const [handler, asked] = chain.find(([h]) => h !== null) ?? [null, null];
  if (!handler) {
    const fallback = env.handlerFallback;
    if (fallback === 'allow')
      return allow(ask.base, 'fallback', `${ask.base.reason} (asked, no handler; the fallback allows)`);
    return deny(
      ask.base,
      { stage: 'policy', by: 'no_handler', layer: null },
      `${ask.base.reason}; approval was required and no permission handler is set`,
    );
  }
  const outcome = await callHandler(handler, ask.request, env.handlerTimeoutMs, { pending: route?.pending === true });
  const base: DecisionBase = { ...ask.base, asked };
  if (outcome.answer === 'pending') return { effect: 'pending', base, request: ask.request };
  if (outcome.answer === 'allow') return allow(base, 'handler', `${ask.base.reason} (approved)`);
  if (outcome.failure === undefined)
    return deny(
      base,
      { stage: 'handler', by: 'handler', layer: null },
      `${ask.base.reason}; the approver denied the call`,
    );
  const by =
    outcome.failure === 'timeout'
      ? 'handler_timeout'
      : outcome.failure === 'threw'
        ? 'handler_error'
        : 'handler_invalid';
  return deny(
    base,
    { stage: 'handler', by, layer: null },
    `${ask.base.reason}; ${outcome.detail}, so the call is denied`,
  );
}

/** Steps 1–5 including the handler: the Decision for one call. */
export async function decide(
  call: NormalizedCall | UnreadableCall,
  context: GateContext,
  env: GateEnvironment,
): Promise<{ decision: Decision; tool: Tool | null; args: Record<string, unknown> | null }> {
  const pre = await precheck(call, context, env);
  if (pre.kind === 'decided') return pre;
  return { decision: await resolveAsk(pre, env), tool: pre.tool, args: pre.args };
}

function decided(decision: Decision, tool: Tool | null, args: Record<string, unknown> | null): Precheck {
  return { kind: 'decided', decision, tool, args };
}

type DenyParts = Pick<DenyDecision, 'stage' | 'by' | 'layer'>;

// Every Decision is built here, field by field in one order, so all Decisions share one object shape:
// spreading bases of many shapes made the object-clone path megamorphic, and a decision cost
// microseconds instead of nanoseconds (bench/, issue 6).
function record(
  base: DecisionBase,
  reason: string,
  effect: Decision['effect'],
  stage: Decision['stage'],
  by: Decision['by'],
  layer: Decision['layer'],
): Decision {
  return Object.freeze({
    callId: base.callId,
    tool: base.tool,
    canonical: base.canonical,
    agent: base.agent,
    tenant: base.tenant,
    runId: base.runId,
    parameters: base.parameters,
    rule: base.rule,
    reason,
    asked: base.asked,
    policyVersion: base.policyVersion,
    effect,
    stage,
    by,
    layer,
  }) as Decision;
}

export function deny(base: DecisionBase, parts: DenyParts, reason: string): DenyDecision {
  return record(base, reason, 'deny', parts.stage, parts.by, parts.layer) as DenyDecision;
}

export function allow(base: DecisionBase, by: AllowDecision['by'], reason: string): AllowDecision {
  return record(base, reason, 'allow', 'policy', by, null) as AllowDecision;
}

const LAYER_NAMES: Record<RefusalLayer, string> = {
  not_declared: 'the agent does not declare it',
  tenant: "the tenant's plan does not include it",
  caller: "the caller's scopes do not cover it",
};

export function refusalText(tool: string, agent: string, layer: RefusalLayer): string {
  return `tool ${quote(tool)} is not permitted for agent ${quote(agent)}: ${LAYER_NAMES[layer]} (layer: ${layer})`;
}

// A refusal's reason is shown to the model: a hostile call must not get a megabyte name, or a hundred
// thousand schema issues, echoed back into the context. The Decision keeps the name as asked.
const MAX_ISSUES = 10;

function quote(name: string): string {
  return describe(name);
}

function issueText(issues: readonly string[]): string {
  const shown = issues.slice(0, MAX_ISSUES).map((issue) => (issue.length > 200 ? `${issue.slice(0, 197)}...` : issue));
  const more = issues.length > MAX_ISSUES ? `; and ${issues.length - MAX_ISSUES} more` : '';
  return `${shown.join('; ')}${more}`;
}

/** The text a model gets for a refused call: what was refused and why, with no way to appeal. */
export function refusalContent(decision: DenyDecision): string {
  // A call the model got wrong (unknown name, bad arguments) can be corrected; a permission refusal cannot.
  if (decision.stage === 'lookup' || decision.stage === 'arguments' || decision.stage === 'validation') {
    return `Tool call rejected: ${decision.reason}.`;
  }
  const by =
    decision.stage === 'allowlist'
      ? `layer ${decision.layer}`
      : decision.rule
        ? `rule ${JSON.stringify(decision.rule)}`
        : decision.stage;
  return `Tool call refused (${by}): ${decision.reason}. This decision is final and cannot be appealed; do not retry it.`;
}
