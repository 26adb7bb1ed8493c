/**
 * The baseline: what one writes without a library. NFKC + lower-case, a Set per layer and a linear
 * scan of every rule, in order, for every call.
 */
import { holds, type Because, type BenchCall, type RuleSpec, type Scenario } from '../scenario.js';
import type { Engine, Verdict } from './engine.js';

/** The baseline's canonical form; casbin and Cedar, which have none, are given this one too. */
export function naiveCanonical(name: string): string {
  return name.normalize('NFKC').trim().toLowerCase();
}

export function naiveEngine(scenario: Scenario): Engine {
  const registered = new Set(scenario.tools.map((t) => naiveCanonical(t.name)));
  const declared = new Set(scenario.declared.map(naiveCanonical));
  const tenant = new Set(scenario.tenant.map(naiveCanonical));
  const caller = new Set(scenario.caller.map(naiveCanonical));
  const tagsOf = new Map(
    scenario.tools.map((t) => [naiveCanonical(t.name), new Set<string>([...t.tags, ...t.customTags])]),
  );
  const rules: readonly RuleSpec[] = scenario.rules.map((r) =>
    r.selector.kind === 'name' ? { ...r, selector: { kind: 'name', name: naiveCanonical(r.selector.name) } } : r,
  );

  function decide(call: BenchCall): Because | RuleSpec {
    const name = naiveCanonical(call.name);
    if (!registered.has(name) || !declared.has(name)) return 'layer:not_declared';
    if (!tenant.has(name)) return 'layer:tenant';
    if (!caller.has(name)) return 'layer:caller';
    const tags = tagsOf.get(name)!;
    for (const rule of rules) {
      const selected = rule.selector.kind === 'name' ? rule.selector.name === name : tags.has(rule.selector.tag);
      if (selected && holds(rule.condition, call.arguments)) return rule;
    }
    return 'fallback';
  }

  return {
    name: 'naive',
    explains: 'first-match',
    explain(call): Verdict {
      const d = decide(call);
      if (typeof d === 'string') return { effect: 'deny', because: [d] };
      return { effect: d.effect, because: [`rule:${d.id}`] };
    },
    run(calls, from, count) {
      const mask = calls.length - 1;
      let allowed = 0;
      for (let k = 0; k < count; k++) {
        const d = decide(calls[(from + k) & mask]!);
        if (typeof d !== 'string' && d.effect === 'allow') allowed++;
      }
      return allowed;
    },
  };
}
