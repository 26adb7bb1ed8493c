/**
 * casbin with its priority model: `priority(p.eft) || deny` takes the first policy line (by priority)
 * whose matcher holds and denies when none does, which is first-match with a deny fallback.
 *
 * The three allowlist layers are grouping policies (g: declared by the agent, g2: in the tenant's plan,
 * g3: in the caller's scopes) checked by the three highest-priority lines; tags are a fourth grouping
 * (g4: tool → tag); argument conditions are casbin's ABAC `eval(p.cond)`. Casbin has no canonical form
 * of names, so it is given the baseline's (NFKC + lower-case), inside the timed call.
 */
import { newEnforcer, newModelFromString, StringAdapter, type Enforcer } from 'casbin';
import type { Because, BenchCall, Condition, Scenario } from '../scenario.js';
import type { Engine, Verdict } from './engine.js';
import { naiveCanonical } from './naive.js';

export const CASBIN_MODEL = `
[request_definition]
r = agent, tenant, caller, tool, args

[policy_definition]
p = priority, kind, sel, cond, eft, id

[role_definition]
g = _, _
g2 = _, _
g3 = _, _
g4 = _, _

[policy_effect]
e = priority(p.eft) || deny

[matchers]
m = (p.kind == "not_declared" && !g(r.tool, r.agent)) || (p.kind == "tenant" && !g2(r.tool, r.tenant)) || (p.kind == "caller" && !g3(r.tool, r.caller)) || (p.kind == "name" && r.tool == p.sel && eval(p.cond)) || (p.kind == "tag" && g4(r.tool, p.sel) && eval(p.cond))
`;

function condition(c: Condition): string {
  switch (c.kind) {
    case 'none':
      return 'true';
    case 'amount_above':
      return `r.args.amount > ${c.value}`;
    case 'mode_is':
      return `r.args.mode == '${c.value}'`;
  }
}

/** The scenario as casbin policy text (CSV lines, as a StringAdapter or a policy file holds them). */
export function casbinPolicy(scenario: Scenario): string {
  const lines: string[] = [
    'p, 1, not_declared, -, true, deny, layer:not_declared',
    'p, 2, tenant, -, true, deny, layer:tenant',
    'p, 3, caller, -, true, deny, layer:caller',
  ];
  scenario.rules.forEach((rule, i) => {
    const sel = rule.selector.kind === 'name' ? naiveCanonical(rule.selector.name) : rule.selector.tag;
    lines.push(
      `p, ${10 + i}, ${rule.selector.kind}, ${sel}, ${condition(rule.condition)}, ${rule.effect}, rule:${rule.id}`,
    );
  });
  for (const name of scenario.declared) lines.push(`g, ${naiveCanonical(name)}, ${scenario.agent}`);
  for (const name of scenario.tenant) lines.push(`g2, ${naiveCanonical(name)}, ${scenario.tenantId}`);
  for (const name of scenario.caller) lines.push(`g3, ${naiveCanonical(name)}, ${scenario.callerId}`);
  for (const tool of scenario.tools)
    for (const tag of [...tool.tags, ...tool.customTags]) lines.push(`g4, ${naiveCanonical(tool.name)}, ${tag}`);
  return lines.join('\n');
}

export async function casbinEngine(scenario: Scenario): Promise<Engine> {
  const enforcer: Enforcer = await newEnforcer(
    newModelFromString(CASBIN_MODEL),
    new StringAdapter(casbinPolicy(scenario)),
  );
  const { agent, tenantId, callerId } = scenario;
  return {
    name: 'casbin',
    explains: 'first-match',
    explain(call): Verdict {
      const [allowed, line] = enforcer.enforceExSync(
        agent,
        tenantId,
        callerId,
        naiveCanonical(call.name),
        call.arguments,
      );
      const because = (line.length === 0 ? 'fallback' : line[5]) as Because;
      return { effect: allowed ? 'allow' : 'deny', because: [because] };
    },
    run(calls: readonly BenchCall[], from, count) {
      const mask = calls.length - 1;
      let allowed = 0;
      for (let k = 0; k < count; k++) {
        const call = calls[(from + k) & mask]!;
        if (enforcer.enforceSync(agent, tenantId, callerId, naiveCanonical(call.name), call.arguments)) allowed++;
      }
      return allowed;
    },
  };
}
