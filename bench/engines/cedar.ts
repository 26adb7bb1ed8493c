/**
 * Cedar (cedar-wasm) with the policy set pre-parsed once (`preparsePolicySet`) and each call authorised
 * by `statefulIsAuthorized`. Cedar has no rule order (a matching forbid overrides any permit), so the
 * scenario is translated:
 *
 * - each allowlist layer is a forbid unless the tool is in it (the tool entity's parents say which
 *   layers list it: `Agent::"…"`, `Plan::"…"`, `Scope::"…"`; an unknown tool has no entity);
 * - an allow rule is a permit; a deny rule is a forbid *unless* an earlier allow rule that can select
 *   one of the same tools matches: decided this way, "some permit and no forbid" is exactly "the first
 *   matching rule allows", and no match at all is Cedar's default deny.
 *
 * Each call sends its principal, action, resource, context (layers as entity references, the arguments
 * as a record) and the one tool entity, built ahead of time per tool. Cedar has no canonical form of
 * names, so it is given the baseline's (NFKC + lower-case), inside the timed call.
 */
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import type { Because, BenchCall, Condition, RuleSpec, Scenario, Selector } from '../scenario.js';
import type { Engine, Verdict } from './engine.js';
import { naiveCanonical } from './naive.js';

let sets = 0;

function condition(c: Condition): string | null {
  switch (c.kind) {
    case 'none':
      return null;
    case 'amount_above':
      return `context.args.amount > ${c.value}`;
    case 'mode_is':
      return `context.args.mode == ${JSON.stringify(c.value)}`;
  }
}

function scope(s: Selector): string {
  return s.kind === 'name'
    ? `resource == Tool::${JSON.stringify(naiveCanonical(s.name))}`
    : `resource in Tag::${JSON.stringify(s.tag)}`;
}

function term(rule: RuleSpec): string {
  const c = condition(rule.condition);
  return c === null ? scope(rule.selector) : `(${scope(rule.selector)} && ${c})`;
}

/** The scenario as Cedar policies, keyed by policy id (the ids are the explanations the bench compares). */
export function cedarPolicies(scenario: Scenario): Record<string, string> {
  const policies: Record<string, string> = {
    'layer:not_declared': 'forbid (principal, action, resource) unless { resource in principal };',
    'layer:tenant': 'forbid (principal, action, resource) unless { resource in context.tenant };',
    'layer:caller': 'forbid (principal, action, resource) unless { resource in context.caller };',
  };
  // Which tools each rule selects, and which rules can select each tool, to find the earlier allow
  // rules a deny rule must yield to.
  const toolsWithTag = new Map<string, number[]>();
  const toolIndex = new Map<string, number>();
  scenario.tools.forEach((tool, i) => {
    toolIndex.set(tool.name, i);
    for (const tag of [...tool.tags, ...tool.customTags]) {
      const list = toolsWithTag.get(tag);
      if (list) list.push(i);
      else toolsWithTag.set(tag, [i]);
    }
  });
  const selected = (rule: RuleSpec): readonly number[] =>
    rule.selector.kind === 'name' ? [toolIndex.get(rule.selector.name)!] : (toolsWithTag.get(rule.selector.tag) ?? []);
  const allowsFor: RuleSpec[][] = scenario.tools.map(() => []);
  for (const rule of scenario.rules) {
    const c = condition(rule.condition);
    const when = c === null ? '' : ` when { ${c} }`;
    const tools = selected(rule);
    if (rule.effect === 'allow') {
      policies[`rule:${rule.id}`] = `permit (principal, action, ${scope(rule.selector)})${when};`;
      for (const t of tools) allowsFor[t]!.push(rule);
    } else {
      const earlier = new Set<RuleSpec>();
      for (const t of tools) for (const allow of allowsFor[t]!) earlier.add(allow);
      const unless = earlier.size === 0 ? '' : ` unless { ${[...earlier].map(term).join(' || ')} }`;
      policies[`rule:${rule.id}`] = `forbid (principal, action, ${scope(rule.selector)})${when}${unless};`;
    }
  }
  return policies;
}

export function cedarEngine(scenario: Scenario): Engine {
  const id = `bench-${scenario.size}-${++sets}`;
  const parsed = cedar.preparsePolicySet(id, { staticPolicies: cedarPolicies(scenario) });
  if (parsed.type !== 'success')
    throw new Error(`cedar: the policy set does not parse: ${parsed.errors.map((e) => e.message).join('; ')}`);
  const principal = { type: 'Agent', id: scenario.agent };
  const action = { type: 'Action', id: 'call' };
  const tenant = { __entity: { type: 'Plan', id: scenario.tenantId } };
  const caller = { __entity: { type: 'Scope', id: scenario.callerId } };
  const declared = new Set(scenario.declared);
  const inTenant = new Set(scenario.tenant);
  const inCaller = new Set(scenario.caller);
  const entities = new Map<string, cedar.EntityJson[]>();
  for (const tool of scenario.tools) {
    const parents: cedar.EntityUidJson[] = [...tool.tags, ...tool.customTags].map((tag) => ({ type: 'Tag', id: tag }));
    if (declared.has(tool.name)) parents.push(principal);
    if (inTenant.has(tool.name)) parents.push(tenant.__entity);
    if (inCaller.has(tool.name)) parents.push(caller.__entity);
    entities.set(naiveCanonical(tool.name), [
      { uid: { type: 'Tool', id: naiveCanonical(tool.name) }, attrs: {}, parents },
    ]);
  }
  const none: cedar.EntityJson[] = [];

  function authorize(call: BenchCall): cedar.Response {
    const name = naiveCanonical(call.name);
    const answer = cedar.statefulIsAuthorized({
      principal,
      action,
      resource: { type: 'Tool', id: name },
      context: { tenant, caller, args: { amount: call.arguments.amount, mode: call.arguments.mode } },
      entities: entities.get(name) ?? none,
      preparsedPolicySetId: id,
    });
    if (answer.type !== 'success') throw new Error(`cedar: ${answer.errors.map((e) => e.message).join('; ')}`);
    return answer.response;
  }

  return {
    name: 'cedar',
    explains: 'determining-set',
    explain(call): Verdict {
      const response = authorize(call);
      if (response.diagnostics.errors.length > 0)
        throw new Error(`cedar: ${response.diagnostics.errors.map((e) => e.error.message).join('; ')}`);
      return { effect: response.decision, because: response.diagnostics.reason as Because[] };
    },
    run(calls, from, count) {
      const mask = calls.length - 1;
      let allowed = 0;
      for (let k = 0; k < count; k++) if (authorize(calls[(from + k) & mask]!).decision === 'allow') allowed++;
      return allowed;
    },
  };
}
