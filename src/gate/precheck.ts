/**
 * Steps 1–5 of the one path, for one call, synchronously where the tool's schema is synchronous (the fast
 * path): find the tool, parse, snapshot and validate the arguments, the allowlist of this dispatch, the
 * policy on the validated snapshot. A final Decision, or an `ask` for dispatch.ts to resolve. Every
 * Decision is built by decisions.ts's one builder; nothing here emits an event or executes anything.
 */
import { namedAgentOf, type ToolAllowlist } from '../allowlist.js';
import { allowlistRefusal, cachedAllowlist, peekSlot } from '../allowlist-cache.js';
import type { JointSlot } from '../allowlist-joint.js';
import type { GateContext, GateEnvironment } from '../contracts/gate.js';
import type { Decision, DecisionBase } from '../decision.js';
import { parseArguments, type NormalizedCall, type UnreadableCall } from '../formats/index.js';
import { canonical } from '../names.js';
import { errorText, type PermissionRequest } from '../permissions/handler.js';
import type { PolicyEvaluation } from '../permissions/policy.js';
import type { Tool } from '../tool.js';
import { decisionOf, deny, fallbackText, issueText, quote, refusalText } from './decisions.js';
import { keptTimeout, outcomeSlot, toolIn } from './slot-memo.js';
import { freezeParsedArguments, snapshotArguments, snapshotRecord } from './snapshot.js';
import { snapshotText } from './snapshot-text.js';

export { allow, deny, refusalContent, refusalText, ruleAndReason } from './decisions.js';

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
      /** Its tool's timeout as its slot kept it (slot-memo.ts `keptTimeout`), or null: read from the tool's metadata. */
      readonly keptTimeoutMs: number | undefined | null;
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
  return boundAgentOf(context) ?? 'agent';
}

/**
 * The agent a context names (its agent's name, or a resolved allowlist's agent), or null when it names none.
 * What an approval binds (`ApprovalBinding.agent`): a call that names no agent is shown as the default
 * `agent` ({@link agentNameOf}) but bound to no agent, so an answer for a declared agent named `agent`
 * never counts for it, nor the other way round.
 */
export function boundAgentOf(context: GateContext): string | null {
  const agent = context.agent;
  if (typeof agent === 'string') return agent;
  if (agent && typeof agent.name === 'string') return agent.name;
  return context.allowlist ? namedAgentOf(context.allowlist) : null;
}

/** Who a call is and what it is about: what every Decision of it carries besides its verdict. */
interface Head {
  readonly call: NormalizedCall | UnreadableCall;
  /** The canonical form of its tool's name. */
  readonly form: string;
  readonly agent: string;
  readonly context: GateContext;
  readonly env: GateEnvironment;
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
  // The joint slot of the name (steady layers: src/allowlist-cache.ts) keeps what the registry found under it.
  const slot = 'problem' in call ? null : peekSlot(context, env, call.name);
  const spelled = 'problem' in call ? undefined : slot === null ? env.lookup(call.name) : toolIn(slot, env, call.name);
  // The slot's memo answers for the tool it holds (slot.own: a frozen tool's data property, read once); any other
  // tool (a look-up not kept: toolIn) has its name compared.
  const ownForm =
    spelled !== undefined &&
    ((slot !== null && slot.own && spelled === slot.found) || spelled.canonicalName === call.name);
  const form = ownForm ? call.name : canonical(call.name);
  const agent = agentNameOf(context);
  if ('problem' in call)
    return decided(
      refusedBefore(call, form, agent, context, env, call.problem, 'arguments', 'malformed_call'),
      null,
      null,
    );
  // 1 find tool
  // (form is call.name when ownForm: the name is not compared again.)
  const tool = ownForm || (form === call.name && spelled !== undefined) ? spelled : env.lookup(form);
  if (!tool) {
    return decided(
      refusedBefore(
        call,
        form,
        agent,
        context,
        env,
        `no tool named ${quote(call.name)} is registered`,
        'lookup',
        'unknown_tool',
        'not_declared',
      ),
      null,
      null,
    );
  }
  // 2 parse arguments: malformed JSON is refused, never run as {}. An object (invoke's arguments) needs no parse.
  const given = call.arguments;
  // The arguments are read once, into a deep-frozen plain copy: what is validated, judged and run. Reading
  // them is part of validating them (a throwing getter fails as validation always has).
  let input: Readonly<Record<string, unknown>> | null = null;
  try {
    // JSON text (a model's call): its object, frozen (snapshot-text.ts: the same text from the same tenant and
    // caller, the same frozen object), without parseArguments' result object; text that does not parse into an
    // object is parsed again there, for the problem to refuse it with.
    if (typeof given === 'string') input = snapshotText(given, context.tenant?.id, context.caller?.id);
  } catch (error) {
    return unreadable(call, form, agent, context, env, tool, error);
  }
  if (input === null) {
    const parsed = isPlainRecord(given) ? null : parseArguments(given);
    if (parsed !== null && !parsed.ok)
      return decided(
        refusedBefore(call, form, agent, context, env, parsed.problem, 'arguments', 'malformed_arguments'),
        tool,
        null,
      );
    try {
      input =
        parsed === null
          ? snapshotRecord(given as Record<string, unknown>) // isPlainRecord: no array, nothing run since
          : typeof given === 'string'
            ? freezeParsedArguments(parsed.value)
            : snapshotArguments(parsed.value);
    } catch (error) {
      return unreadable(call, form, agent, context, env, tool, error);
    }
  }
  const snapshot = input;
  // The slot peeked under the call's name is `form`'s only when the name is its own form (the strings compared only
  // when ownForm did not already say so): allowlistRefusal takes it as form's without comparing them.
  const formSlot = ownForm || form === call.name ? slot : null;
  // The slot keeping the tool's timeout for execute.ts, when fixed (slot-memo.ts): its metadata is not read per call.
  const keptTimeoutMs = keptTimeout(slot, tool);
  // 3 validate against the tool's schema
  let validation;
  try {
    validation = tool.validate(snapshot as Record<string, unknown>);
  } catch (error) {
    return validationFailed({ call, form, agent, context, env }, tool, error);
  }
  if (validation instanceof Promise) {
    const head: Head = { call, form, agent, context, env };
    return validation.then(
      (result) =>
        result.ok
          ? validated(result.value, snapshot, tool, call, form, agent, context, env, formSlot, keptTimeoutMs)
          : mismatched(result.issues, tool, call, form, agent, context, env),
      (error: unknown) => validationFailed(head, tool, error),
    );
  }
  // Its fields read here, not handed on: a synchronous schema's result object then does not outlive this call, and
  // V8 drops it once the validator is inlined (40 bytes of an `invoke`, issue 25).
  if (!validation.ok) return mismatched(validation.issues, tool, call, form, agent, context, env);
  return validated(validation.value, snapshot, tool, call, form, agent, context, env, formSlot, keptTimeoutMs);
}

/** A refusal at step 3: the arguments could not be read or validated, or do not match the tool's schema. */
function invalid(
  call: NormalizedCall | UnreadableCall,
  form: string,
  agent: string,
  context: GateContext,
  env: GateEnvironment,
  tool: Tool,
  reason: string,
): Precheck {
  return decided(refusedBefore(call, form, agent, context, env, reason, 'validation', 'invalid_arguments'), tool, null);
}

/** Arguments that cannot be read as JSON (a throwing getter, a cycle, a `"__proto__"` key): refused at step 3. */
function unreadable(
  call: NormalizedCall | UnreadableCall,
  form: string,
  agent: string,
  context: GateContext,
  env: GateEnvironment,
  tool: Tool,
  error: unknown,
): Precheck {
  return invalid(call, form, agent, context, env, tool, `the arguments cannot be read as JSON: ${errorText(error)}`);
}

/** A schema that threw (or rejected) while validating: the call is refused, never run unvalidated. */
function validationFailed(head: Head, tool: Tool, error: unknown): Precheck {
  const { call, form, agent, context, env } = head;
  return invalid(call, form, agent, context, env, tool, `validating the arguments failed: ${errorText(error)}`);
}

/** What parseArguments passes through as is: an object that is not an array (its `isRecord`). */
function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A refusal at step 3: the arguments do not match the tool's schema. */
function mismatched(
  issues: readonly string[],
  tool: Tool,
  call: NormalizedCall | UnreadableCall,
  form: string,
  agent: string,
  context: GateContext,
  env: GateEnvironment,
): Precheck {
  return invalid(
    call,
    form,
    agent,
    context,
    env,
    tool,
    `the arguments do not match the schema of ${quote(tool.name)}: ${issueText(issues)}`,
  );
}

/** Steps 4 and 5 for arguments the schema accepted (`value`: what it made of the snapshot `input`). */
function validated(
  value: Record<string, unknown>,
  input: Readonly<Record<string, unknown>>,
  tool: Tool,
  call: NormalizedCall | UnreadableCall,
  form: string,
  agent: string,
  context: GateContext,
  env: GateEnvironment,
  slot: JointSlot | null,
  keptTimeoutMs: number | undefined | null,
): Precheck {
  // A schema that returns a new value (defaults, transforms) gets that value snapshotted in turn.
  let args: Readonly<Record<string, unknown>>;
  try {
    args = value === input ? input : snapshotArguments(value);
    if (args !== input) transformed.set(args, input);
  } catch (error) {
    return invalid(
      call,
      form,
      agent,
      context,
      env,
      tool,
      `the validated arguments cannot be read as JSON: ${errorText(error)}`,
    );
  }
  // 4 allowlist: this call's verdict under the dispatch's layers (src/allowlist-cache.ts)
  const layer = allowlistRefusal(context, env, form, call.name, agent, slot);
  if (layer !== null)
    return decided(
      decisionOf(
        call,
        form,
        agent,
        context,
        env,
        args,
        null,
        refusalText(call.name, agent, layer),
        'deny',
        'allowlist',
        'allowlist',
        layer,
      ),
      tool,
      args,
    );
  // 5 policy on the validated arguments
  const policy = env.policy;
  if (!policy)
    return decided(
      decisionOf(
        call,
        form,
        agent,
        context,
        env,
        args,
        null,
        'no permission policy is set',
        'allow',
        'policy',
        'no_policy',
        null,
      ),
      tool,
      args,
      keptTimeoutMs,
    );
  // The outcome kept for the tool whatever the arguments, its Decision's fields read from the slot (slot-memo.ts).
  const kept = outcomeSlot(policy, tool, env);
  if (kept !== null && kept.effect !== null)
    return decided(
      decisionOf(call, form, agent, context, env, args, kept.rule, kept.reason, kept.effect, 'policy', kept.by, null),
      tool,
      args,
      keptTimeoutMs,
    );
  const evaluation: PolicyEvaluation = kept?.outcome ?? policy.evaluate(tool, args);
  const rule = evaluation.rule?.name ?? null;
  if (evaluation.by === 'rule_error')
    return decided(
      decisionOf(call, form, agent, context, env, args, rule, evaluation.error, 'deny', 'policy', 'rule_error', null),
      tool,
      args,
    );
  const reason = evaluation.rule ? evaluation.rule.reason : fallbackText(evaluation.result);
  if (evaluation.result !== 'ask')
    return decided(
      decisionOf(call, form, agent, context, env, args, rule, reason, evaluation.result, 'policy', evaluation.by, null),
      tool,
      args,
      keptTimeoutMs,
    );
  return asked(tool, args, call, form, agent, context, env, rule, reason);
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

/** A policy's `ask`: the call's DecisionBase (what its final Decision will be made from) and the handler's request. */
function asked(
  tool: Tool,
  args: Readonly<Record<string, unknown>>,
  call: NormalizedCall | UnreadableCall,
  form: string,
  agent: string,
  context: GateContext,
  env: GateEnvironment,
  rule: string | null,
  reason: string,
): Precheck {
  const base: DecisionBase = {
    callId: call.id,
    tool: call.name,
    canonical: form,
    agent,
    tenant: context.tenant?.id ?? null,
    runId: context.runId ?? null,
    parameters: args,
    rule,
    reason,
    asked: null,
    policyVersion: env.policy?.version ?? null,
  };
  const request: PermissionRequest = {
    toolName: tool.name,
    parameters: args,
    reason,
    ruleName: rule ?? '(fallback)',
    metadata: tool.metadata,
    callId: call.id,
    agent,
    tenant: base.tenant,
    runId: base.runId,
    caller: context.caller?.id ?? null,
  };
  return { kind: 'ask', tool, args, base, request };
}

function decided(
  decision: Decision,
  tool: Tool | null,
  args: Readonly<Record<string, unknown>> | null,
  keptTimeoutMs: number | undefined | null = null,
): Precheck {
  return { kind: 'decided', decision, tool, args, keptTimeoutMs };
}

/** A refusal before the arguments are read (malformed call, unknown tool, unreadable or invalid arguments): no parameters, no rule. */
function refusedBefore(
  call: NormalizedCall | UnreadableCall,
  form: string,
  agent: string,
  context: GateContext,
  env: GateEnvironment,
  reason: string,
  stage: Decision['stage'],
  by: Decision['by'],
  layer: Decision['layer'] = null,
): Decision {
  return decisionOf(call, form, agent, context, env, null, null, reason, 'deny', stage, by, layer);
}
