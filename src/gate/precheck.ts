/**
 * Steps 1–5 of the one path, for one call, synchronously where the tool's schema is synchronous (the fast
 * path): find the tool, parse, snapshot and validate the arguments, the allowlist of this dispatch, the
 * policy on the validated snapshot. A final Decision, or an `ask` for dispatch.ts to resolve. Every
 * Decision is built in this folder (src/gate/); nothing here emits an event or executes anything.
 */
import type { ToolAllowlist } from '../allowlist.js';
import { allowlistRefusal, cachedAllowlist } from '../allowlist-cache.js';
import type { GateContext, GateEnvironment } from '../contracts/gate.js';
import type { AllowDecision, Decision, DecisionBase, DenyDecision, DenyStage } from '../decision.js';
import type { RefusalLayer } from '../errors.js';
import { parseArguments, type NormalizedCall, type UnreadableCall } from '../formats/index.js';
import { canonical, describe } from '../names.js';
import { errorText, type PermissionRequest } from '../permissions/handler.js';
import type { PolicyEvaluation } from '../permissions/policy.js';
import type { PermissionResult } from '../permissions/result.js';
import type { Tool } from '../tool.js';
import { freezeParsedArguments, snapshotArguments } from './snapshot.js';

/** A call that passed steps 1–4 and was evaluated by the policy (step 5), before any handler. */
export interface Evaluated {
  readonly tool: Tool;
  readonly args: Readonly<Record<string, unknown>>;
  readonly base: DecisionBase;
  readonly evaluation: PolicyEvaluation | null;
}

/** The outcome of steps 1–5 before an ask is resolved: a final Decision, or an ask for a handler. */
export type Precheck =
  | {
      readonly kind: 'decided';
      readonly decision: Decision;
      readonly tool: Tool | null;
      /** The frozen snapshot of the validated arguments (null before validation succeeded). */
      readonly args: Readonly<Record<string, unknown>> | null;
    }
  | {
      readonly kind: 'ask';
      readonly tool: Tool;
      readonly args: Readonly<Record<string, unknown>>;
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
  // A name spelled as its tool's canonical name (most calls) is its own canonical form: found at once, and
  // not canonicalised again (canonical() is idempotent). Any other spelling is canonicalised and looked up.
  const spelled = 'problem' in call ? undefined : env.lookup(call.name);
  const form = spelled !== undefined && spelled.canonicalName === call.name ? call.name : canonical(call.name);
  const base: Draft = {
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
    effect: 'deny',
    stage: 'lookup',
    by: 'unknown_tool',
    layer: null,
  };
  if ('problem' in call)
    return decided(deny(base, { stage: 'arguments', by: 'malformed_call', layer: null }, call.problem), null, null);
  // 1 find tool
  const tool = form === call.name && spelled !== undefined ? spelled : env.lookup(form);
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
  // 2 parse arguments: malformed JSON is refused, never run as {}. An object (invoke's arguments) needs no parse.
  const given = call.arguments;
  const parsed = isPlainRecord(given) ? null : parseArguments(given);
  if (parsed !== null && !parsed.ok)
    return decided(
      deny(base, { stage: 'arguments', by: 'malformed_arguments', layer: null }, parsed.problem),
      tool,
      null,
    );
  // The arguments are read once, into a deep-frozen plain copy: what is validated, judged and run. Reading
  // them is part of validating them (a throwing getter fails as validation always has).
  let input: Readonly<Record<string, unknown>>;
  try {
    // Arguments that came as JSON text were made by JSON.parse just now: frozen where they are, not copied.
    input =
      parsed === null
        ? snapshotArguments(given as Record<string, unknown>)
        : typeof given === 'string'
          ? freezeParsedArguments(parsed.value)
          : snapshotArguments(parsed.value);
  } catch (error) {
    return invalid(base, tool, `the arguments cannot be read as JSON: ${errorText(error)}`);
  }
  // 3 validate against the tool's schema
  let validation;
  try {
    validation = tool.validate(input as Record<string, unknown>);
  } catch (error) {
    return validationFailed(base, tool, error);
  }
  if (validation instanceof Promise) {
    return validation.then(
      (result) => afterValidation(result, input, tool, base, context, env),
      (error: unknown) => validationFailed(base, tool, error),
    );
  }
  return afterValidation(validation, input, tool, base, context, env);
}

/** A refusal at step 3: the arguments could not be read or validated, or do not match the tool's schema. */
function invalid(base: DecisionBase, tool: Tool, reason: string): Precheck {
  return decided(deny(base, { stage: 'validation', by: 'invalid_arguments', layer: null }, reason), tool, null);
}

/** A schema that threw (or rejected) while validating: the call is refused, never run unvalidated. */
function validationFailed(base: DecisionBase, tool: Tool, error: unknown): Precheck {
  return invalid(base, tool, `validating the arguments failed: ${errorText(error)}`);
}

/** What parseArguments passes through as is: an object that is not an array (its `isRecord`). */
function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function afterValidation(
  validation: Awaited<ReturnType<Tool['validate']>>,
  input: Readonly<Record<string, unknown>>,
  tool: Tool,
  base: Draft,
  context: GateContext,
  env: GateEnvironment,
): Precheck {
  if (!validation.ok) {
    return invalid(
      base,
      tool,
      `the arguments do not match the schema of ${quote(tool.name)}: ${issueText(validation.issues)}`,
    );
  }
  // A schema that returns a new value (defaults, transforms) gets that value snapshotted in turn.
  let args: Readonly<Record<string, unknown>>;
  try {
    args = validation.value === input ? input : snapshotArguments(validation.value);
    if (args !== input) transformed.set(args, input);
  } catch (error) {
    return invalid(base, tool, `the validated arguments cannot be read as JSON: ${errorText(error)}`);
  }
  // 4 allowlist: this call's verdict under the dispatch's layers (src/allowlist-cache.ts)
  const layer = allowlistRefusal(context, env, base.canonical, base.tool, base.agent);
  if (layer !== null)
    return decided(
      made(base, args, null, refusalText(base.tool, base.agent, layer), 'deny', 'allowlist', 'allowlist', layer),
      tool,
      args,
    );
  // 5 policy on the validated arguments
  const policy = env.policy;
  if (!policy)
    return decided(
      made(base, args, null, 'no permission policy is set', 'allow', 'policy', 'no_policy', null),
      tool,
      args,
    );
  return judged(policy.evaluate(tool, args), tool, args, base, context.caller?.id ?? null);
}

/**
 * The snapshot a schema turned into `args` (defaults, transforms), by `args`: a call decided again is validated
 * from what it was given, not from what its schema made of it (a transform applied twice, dollars to cents to
 * a hundred times the cents, would run another call). Only schemas that return a new value are kept here.
 */
const transformed = new WeakMap<object, Readonly<Record<string, unknown>>>();

/** The arguments a call with these validated arguments was given (the same object unless its schema returned a new value). */
export function givenArguments(args: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> {
  return transformed.get(args) ?? args;
}

/**
 * Step 4 again for a call decided earlier under the same context object, whose layer arrays may have been
 * changed in place since (each plain array is checked against its snapshot): the refusal now, or the
 * Decision as it was.
 */
export function allowlistAgain(decision: Decision, context: GateContext, env: GateEnvironment): Decision {
  const layer = allowlistRefusal(context, env, decision.canonical, decision.tool, decision.agent);
  if (layer === null) return decision;
  return deny(
    decision,
    { stage: 'allowlist', by: 'allowlist', layer },
    refusalText(decision.tool, decision.agent, layer),
  );
}

/** A policy evaluation as a final Decision (built once, with `args` and the rule) or an ask. */
function judged(
  evaluation: PolicyEvaluation,
  tool: Tool,
  args: Readonly<Record<string, unknown>>,
  base: Draft,
  caller: string | null,
): Precheck {
  const rule = evaluation.rule?.name ?? null;
  if (evaluation.by === 'rule_error')
    return decided(made(base, args, rule, evaluation.error, 'deny', 'policy', 'rule_error', null), tool, args);
  const reason = evaluation.rule ? evaluation.rule.reason : fallbackText(evaluation.result);
  if (evaluation.result === 'allow')
    return decided(made(base, args, rule, reason, 'allow', 'policy', evaluation.by, null), tool, args);
  if (evaluation.result === 'deny')
    return decided(made(base, args, rule, reason, 'deny', 'policy', evaluation.by, null), tool, args);
  // An ask's base is the DecisionBase alone (the draft's fields of a final Decision are not its own).
  const { effect: _effect, stage: _stage, by: _by, layer: _layer, ...fields } = base;
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
    caller,
  };
  return { kind: 'ask', tool, args, base: { ...fields, parameters: args, rule, reason }, request };
}

function fallbackText(result: PermissionResult): string {
  return result === 'allow'
    ? "no rule matched; the policy's fallback is allow"
    : result === 'deny'
      ? "no rule matched; the policy's fallback is deny"
      : "no rule matched; the policy's fallback is ask";
}

function decided(decision: Decision, tool: Tool | null, args: Readonly<Record<string, unknown>> | null): Precheck {
  return { kind: 'decided', decision, tool, args };
}

type DenyParts = Pick<DenyDecision, 'stage' | 'by' | 'layer'>;

/**
 * A call's Decision while steps 1–5 make it: every field of {@link record}'s, in its order (so the same object
 * shape), filled in by {@link made} and frozen there. One object per call where a base and then a Decision
 * copied from it were two; a refusal before step 4 is still made from it by {@link deny} (a copy). It never
 * leaves precheck unfrozen.
 */
type Draft = { -readonly [K in keyof DecisionBase]: DecisionBase[K] } & {
  effect: Decision['effect'];
  stage: Decision['stage'];
  by: Decision['by'];
  layer: Decision['layer'];
};

/** The draft made the call's final Decision: its last fields set, then frozen (the Decision {@link record} makes). */
function made(
  draft: Draft,
  parameters: DecisionBase['parameters'],
  rule: DecisionBase['rule'],
  reason: string,
  effect: Decision['effect'],
  stage: Decision['stage'],
  by: Decision['by'],
  layer: Decision['layer'],
): Decision {
  draft.parameters = parameters;
  draft.rule = rule;
  draft.reason = reason;
  draft.effect = effect;
  draft.stage = stage;
  draft.by = by;
  draft.layer = layer;
  return Object.freeze(draft) as Decision;
}

// Every Decision is built here, field by field in one order, so all Decisions share one object shape:
// spreading bases of many shapes made the object-clone path megamorphic, and a decision cost
// microseconds instead of nanoseconds (bench/, issue 6).
function record(
  base: DecisionBase,
  parameters: DecisionBase['parameters'],
  rule: DecisionBase['rule'],
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
    parameters,
    rule,
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
  return record(base, base.parameters, base.rule, reason, 'deny', parts.stage, parts.by, parts.layer) as DenyDecision;
}

export function allow(base: DecisionBase, by: AllowDecision['by'], reason: string): AllowDecision {
  return record(base, base.parameters, base.rule, reason, 'allow', 'policy', by, null) as AllowDecision;
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

// Refusal texts quote the call's name and the agent's on every refused call: the quoted form of a name
// is kept (JSON.stringify per refusal was a tenth of a refused decision's time, issue 12). Names of at most
// 256 characters, at most 1,024 of them; a full cache is dropped whole, like the canonical cache.
const QUOTED_LIMIT = 1024;
let quoted = new Map<string, string>();

function quote(name: string): string {
  let text = quoted.get(name);
  if (text === undefined) {
    text = describe(name);
    if (name.length <= 256) {
      if (quoted.size >= QUOTED_LIMIT) quoted = new Map();
      quoted.set(name, text);
    }
  }
  return text;
}

function issueText(issues: readonly string[]): string {
  const shown = issues.slice(0, MAX_ISSUES).map((issue) => (issue.length > 200 ? `${issue.slice(0, 197)}...` : issue));
  const more = issues.length > MAX_ISSUES ? `; and ${issues.length - MAX_ISSUES} more` : '';
  return `${shown.join('; ')}${more}`;
}

/** The end of a final refusal: the model may not have the call, and must not ask again. */
const FINAL = 'This decision is final and cannot be appealed; do not retry it.';

/**
 * What the model may do after a refusal, by stage: the one table of the refusal texts' endings. A call the
 * model got wrong can be corrected; a limit's own text says when (or whether) it may be retried, so a
 * "final" after it contradicted it; a store that could not answer refused a call nothing judged.
 */
const AFTER: Readonly<Record<DenyStage, string>> = Object.freeze({
  // "rejected": the reason says what was wrong with the call, which the model may correct.
  lookup: '',
  arguments: '',
  validation: '',
  allowlist: FINAL,
  policy: FINAL,
  handler: FINAL,
  budget: FINAL,
  depth: FINAL,
  limit: '',
  store:
    'It did not run, and no limit refused it: the store its limits count in could not be used; it may be tried again later.',
});

/**
 * The rule and the reason of a Decision in one phrase, said once: a rule without a `reason` of its own has
 * the reason `rule "name"`, and "(rule "x"): rule "x"" said the name twice (issue 22).
 */
export function ruleAndReason(decision: Pick<DecisionBase, 'rule' | 'reason'>): string {
  if (decision.rule === null) return `: ${decision.reason}`;
  const rule = `rule ${JSON.stringify(decision.rule)}`;
  return decision.reason === rule ? ` (${rule})` : ` (${rule}): ${decision.reason}`;
}

/** The text a model gets for a refused call: what was refused and why, and what it may do instead. */
export function refusalContent(decision: DenyDecision): string {
  // A call the model got wrong (unknown name, bad arguments) can be corrected; a permission refusal cannot.
  if (decision.stage === 'lookup' || decision.stage === 'arguments' || decision.stage === 'validation') {
    return `Tool call rejected: ${decision.reason}.`;
  }
  const after = AFTER[decision.stage];
  const tail = after === '' ? '' : ` ${after}`;
  const head =
    decision.stage === 'allowlist'
      ? ` (layer ${decision.layer}): ${decision.reason}`
      : // A limit's or a store's refusal keeps the rule that allowed the call: it is not the refusing one.
        (decision.stage === 'policy' || decision.stage === 'handler') && decision.rule
        ? ruleAndReason(decision)
        : ` (${decision.stage}): ${decision.reason}`;
  return `Tool call refused${head}${endsSentence(head) ? '' : '.'}${tail}`;
}

function endsSentence(text: string): boolean {
  return /[.!?]$/.test(text);
}
