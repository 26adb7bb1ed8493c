/**
 * Why a call was decided as it was: the canonical name, each allowlist layer, each rule tried (with
 * the condition that held, failed or could not be judged) and the handler. The decision itself comes
 * from the gate's own precheck, so an explanation can never disagree with what the gate does; the
 * trace beside it comes from the policy's traced evaluation, extended with condition-level detail.
 */
import type { Decision } from '../decision.js';
import { readCall, type ToolCallInput } from '../formats/index.js';
import { previewCall } from '../gate/index.js';
import type { LimitCounter } from '../limits/limiter.js';
import { canonical } from '../names.js';
import type { RuleTrace } from '../permissions/policy.js';
import type { ToolRegistry } from '../registry.js';
import { MemoryCounterStore } from '../stores/memory.js';
import type { Tool } from '../tool.js';
import { traceTests, type ConditionTrace } from './matchers.js';
import type { PolicyContextInput, PolicyRuleInfo, PolicySet } from './policy-set.js';

/** One allowlist layer's part in a decision. */
export interface LayerExplanation {
  readonly layer: 'agent' | 'tenant' | 'caller';
  /** false when the layer states nothing (and so narrows nothing). */
  readonly states: boolean;
  /** Whether it permits the tool; null when it states nothing. */
  readonly permits: boolean | null;
  readonly detail: string;
}

/** One rule's part in a decision. */
export interface RuleExplanation {
  readonly rule: string;
  readonly index: number;
  readonly result: string;
  readonly outcome: RuleTrace['outcome'];
  readonly detail: string;
  readonly line: number;
  readonly conditions: readonly ConditionTrace[];
}

/** The outcome: the gate's decision, or `ask` when a rule asks (the CLI asks no handler). */
export interface ExplainedDecision {
  readonly effect: 'allow' | 'deny' | 'ask';
  readonly stage: Decision['stage'];
  readonly by: string;
  readonly layer: string | null;
  readonly rule: string | null;
  readonly reason: string;
}

/** The whole explanation of one call. */
export interface Explanation {
  readonly callId: string;
  /** The name as asked. */
  readonly tool: string;
  readonly canonical: string;
  readonly format: string;
  /** The registered tool's declared name, tags and namespace, where one was found. */
  readonly found: { readonly name: string; readonly namespace: string | null; readonly tags: readonly string[] } | null;
  readonly arguments: Readonly<Record<string, unknown>> | null;
  readonly layers: readonly LayerExplanation[];
  /** The rules in file order, or empty when the call was refused before the policy (see `decision.stage`). */
  readonly rules: readonly RuleExplanation[];
  readonly fallback: string;
  readonly handler: string | null;
  readonly decision: ExplainedDecision;
  readonly policyVersion: string;
  /**
   * The limits that select this call and their counters now (read, not charged): the registry's Limiter
   * when it has one (live shared counters), else the file's `limits:` over empty counters. Absent: none apply.
   */
  readonly limits?: readonly LimitCounter[];
}

/**
 * Explains one call (any supported call shape) against a policy set, for the agent, tenant and scopes
 * named. Decides only: nothing runs and no handler is asked.
 *
 * @example
 * const set = await loadPolicyFile('policy.yaml');
 * const why = await explainCall(set, { name: 'read_file', arguments: { path: '/data/../etc/passwd' } }, { agent: 'concierge' });
 * why.decision.rule // the rule that refused it
 */
export async function explainCall(
  set: PolicySet,
  call: ToolCallInput,
  who: PolicyContextInput = {},
  registry: ToolRegistry = set.registry(),
): Promise<Explanation> {
  const read = readCall(call);
  const context = set.context(who);
  const pre = await previewCall(read, context, registry);
  const form = canonical(read.name);
  const tool = pre.tool ?? registry.get(read.name) ?? null;
  const args = pre.args;
  const decision: ExplainedDecision =
    pre.kind === 'ask'
      ? { effect: 'ask', stage: 'policy', by: 'rule', layer: null, rule: pre.base.rule, reason: pre.base.reason }
      : {
          effect: pre.decision.effect,
          stage: pre.decision.stage,
          by: pre.decision.by,
          layer: pre.decision.layer,
          rule: pre.decision.rule,
          reason: pre.decision.reason,
        };
  const reachedPolicy =
    tool !== null &&
    args !== null &&
    (pre.kind === 'ask' || pre.decision.stage === 'policy' || pre.decision.stage === 'handler');
  const limits = await limitsFor(set, registry, who, form, tool);
  return {
    callId: read.id,
    tool: read.name,
    canonical: form,
    format: read.format,
    found: tool ? { name: tool.name, namespace: tool.namespace, tags: [...tool.metadata.allTags] } : null,
    arguments: args,
    layers: layersFor(set, who, form, registry),
    rules: reachedPolicy ? rulesFor(set, tool, args) : [],
    fallback: set.policy.fallback,
    handler:
      pre.kind === 'ask'
        ? `rule ${JSON.stringify(pre.base.rule)} answers ask: at run time the policy's handler, else the registry's handler decides, and with neither the call is denied; explain asks no one`
        : null,
    decision,
    policyVersion: set.version,
    ...(limits.length > 0 ? { limits } : {}),
  };
}

async function limitsFor(
  set: PolicySet,
  registry: ToolRegistry,
  who: PolicyContextInput,
  form: string,
  tool: Tool | null,
): Promise<LimitCounter[]> {
  const limiter = registry.getLimiter() ?? (set.limits.length > 0 ? set.limiter(new MemoryCounterStore()) : null);
  if (!limiter) return [];
  return limiter.explain({
    tenant: who.tenant ?? null,
    caller: null,
    agent: who.agent ?? 'agent',
    runId: who.runId ?? null,
    tool: form,
    tags: tool ? [...tool.metadata.allTags] : [],
  });
}

function layersFor(set: PolicySet, who: PolicyContextInput, form: string, registry: ToolRegistry): LayerExplanation[] {
  const layers: LayerExplanation[] = [];
  if (who.agent !== undefined) {
    const agent = set.agent(who.agent);
    const permits = agent.tools.some((n) => canonical(n) === form);
    layers.push({
      layer: 'agent',
      states: true,
      permits,
      detail: `agent ${JSON.stringify(agent.name)} ${permits ? 'declares' : 'does not declare'} it (declares ${list(agent.tools)})`,
    });
  } else {
    const permits = registry.has(form);
    layers.push({
      layer: 'agent',
      states: false,
      permits: null,
      detail: `no agent given: the default agent declares every registered tool${permits ? '' : ', and this one is not registered'}`,
    });
  }
  if (who.tenant !== undefined) {
    const tenant = set.tenantLimits(who.tenant);
    if (tenant.tools === undefined)
      layers.push({
        layer: 'tenant',
        states: false,
        permits: null,
        detail: `tenant ${JSON.stringify(who.tenant)} lists no tools, so its layer narrows nothing`,
      });
    else {
      const permits = tenant.tools.some((n) => canonical(n) === form);
      layers.push({
        layer: 'tenant',
        states: true,
        permits,
        detail: `tenant ${JSON.stringify(who.tenant)}'s plan ${permits ? 'includes' : 'does not include'} it (includes ${list(tenant.tools)})`,
      });
    }
  } else {
    layers.push({
      layer: 'tenant',
      states: false,
      permits: null,
      detail: 'no tenant given: the tenant layer narrows nothing',
    });
  }
  if (who.scopes !== undefined) {
    const scopes = [...who.scopes];
    const covering = scopes.filter((s) =>
      (Object.hasOwn(set.scopes, s) ? set.scopes[s]! : []).some((n) => canonical(n) === form),
    );
    const unknown = scopes.filter((s) => !Object.hasOwn(set.scopes, s));
    const permits = covering.length > 0;
    let detail = permits
      ? `scope ${covering.map((s) => JSON.stringify(s)).join(', ')} covers it`
      : `none of the scopes ${list(scopes)} covers it`;
    if (unknown.length > 0)
      detail += `; scope ${unknown.map((s) => JSON.stringify(s)).join(', ')} is not in the file's scope map and covers nothing`;
    layers.push({ layer: 'caller', states: true, permits, detail });
  } else {
    layers.push({
      layer: 'caller',
      states: false,
      permits: null,
      detail: 'no scopes given: the caller layer narrows nothing',
    });
  }
  return layers;
}

function rulesFor(set: PolicySet, tool: Tool, args: Readonly<Record<string, unknown>>): RuleExplanation[] {
  const evaluation = set.policy.evaluate(tool, args, { trace: true });
  // By name: shadow rules are not in the enforced policy, so its indices are not the file's.
  const infos = new Map(set.rules.map((r) => [r.name, r]));
  return (evaluation.trace ?? []).map((t) => {
    const info = infos.get(t.rule);
    const conditions =
      info && (t.outcome === 'matched' || t.outcome === 'not_matched' || t.outcome === 'threw')
        ? traceTests(info.tests, args)
        : [];
    let detail: string;
    switch (t.outcome) {
      case 'not_selected':
        detail = info ? whyNotSelected(info, tool) : (t.detail ?? 'not selected');
        break;
      case 'not_reached':
        detail = 'not reached: an earlier rule decided';
        break;
      case 'matched':
        detail = conditions.length === 0 ? 'selects the tool and has no conditions' : 'every condition holds';
        break;
      case 'not_matched':
        detail = 'a condition does not hold';
        break;
      case 'threw':
        detail = `${t.detail ?? 'the rule failed'}: the call is denied`;
        break;
    }
    return {
      rule: t.rule,
      index: t.index,
      result: info?.result ?? '?',
      outcome: t.outcome,
      detail,
      line: info?.position.line ?? 0,
      conditions,
    };
  });
}

/** Why a rule's selectors leave the tool out. */
function whyNotSelected(info: PolicyRuleInfo, tool: Tool): string {
  const reasons: string[] = [];
  if (info.namespace !== null && tool.namespace !== info.namespace)
    reasons.push(
      `its namespace is ${tool.namespace === null ? 'none' : JSON.stringify(tool.namespace)}, not ${JSON.stringify(info.namespace)}`,
    );
  if (info.exact.length + info.globs.length > 0) {
    const named = info.exact.includes(tool.canonicalName) || info.globs.some((g) => g.test(tool.canonicalName));
    if (!named)
      reasons.push(
        `${JSON.stringify(tool.canonicalName)} is not among ${list([...info.exact, ...info.globs.map((g) => g.pattern)])}`,
      );
  }
  if (info.tags !== null && !info.tags.some((t) => tool.metadata.allTags.has(t))) {
    reasons.push(`it carries none of the tags ${list(info.tags)} (it has ${list([...tool.metadata.allTags])})`);
  }
  return `does not select the tool: ${reasons.join('; ') || 'its selectors leave it out'}`;
}

function list(items: readonly string[]): string {
  return items.length === 0 ? '(none)' : items.map((s) => JSON.stringify(s)).join(', ');
}

/** The decision alone (no trace), as `toolgate check` prints it: the gate's precheck, with `ask` unresolved. */
export async function previewDecision(
  set: PolicySet,
  call: ToolCallInput,
  who: PolicyContextInput = {},
  registry: ToolRegistry = set.registry(),
): Promise<ExplainedDecision & { readonly callId: string; readonly tool: string; readonly canonical: string }> {
  const read = readCall(call);
  const pre = await previewCall(read, set.context(who), registry);
  const head = { callId: read.id, tool: read.name, canonical: canonical(read.name) };
  if (pre.kind === 'ask')
    return {
      ...head,
      effect: 'ask',
      stage: 'policy',
      by: 'rule',
      layer: null,
      rule: pre.base.rule,
      reason: pre.base.reason,
    };
  const d = pre.decision;
  return { ...head, effect: d.effect, stage: d.stage, by: d.by, layer: d.layer, rule: d.rule, reason: d.reason };
}
