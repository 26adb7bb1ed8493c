/**
 * Attack (policy load, rule-info.ts): a loaded rule's info used to be a frozen object with its own
 * `position` accessor, so nothing could change where lint and explain say a rule is. Since rule infos are
 * FileRuleInfo instances, `position` is a getter on their shared class prototype: if that prototype could
 * be changed, any code holding one PolicySet could redefine `position` (or add fields) for every rule of
 * every policy loaded in the process, before and after — explain and lint would then name the wrong line
 * for the rule that refused a call. The prototype must be as immutable as the instances.
 */
import { describe, expect, it } from 'vitest';
import { explainCall, lintPolicy, parsePolicy, type PolicySet } from '../../src/policy-file/index.js';

function load(text: string): PolicySet {
  const result = parsePolicy(text, { file: 'p.yaml' });
  if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('\n'));
  return result.policy;
}

const TEXT = [
  'version: 1',
  'fallback: allow',
  'tools:',
  '  rm: {}',
  'rules:',
  '  - name: no-rm',
  '    result: deny',
  '    tools: rm',
  '  - name: no-rm-again',
  '    result: deny',
  '    tools: rm',
  '',
].join('\n');

describe('a rule info through its shared prototype', () => {
  it('cannot have its position redefined (explain and lint keep the true line)', async () => {
    const victim = load(TEXT);
    const other = load(TEXT.replace('no-rm-again', 'again'));
    const proto = Object.getPrototypeOf(other.rules[0]) as object;
    try {
      Object.defineProperty(proto, 'position', { get: () => ({ line: 1, column: 1 }), configurable: true });
    } catch {
      // refused: what a frozen prototype does
    }
    expect(victim.rules[0]!.position).toEqual({ line: 6, column: 5 });
    const why = await explainCall(victim, { id: 'c1', name: 'rm', arguments: {} });
    expect(why.decision.rule).toBe('no-rm');
    expect(why.rules.find((r) => r.rule === 'no-rm')?.line).toBe(6);
    const shadowed = lintPolicy(victim).find((f) => f.code === 'shadowed-rule');
    expect(shadowed?.message).toContain('line 6');
  });

  it('cannot gain fields every rule would inherit', () => {
    const set = load(TEXT);
    const proto = Object.getPrototypeOf(set.rules[0]) as Record<string, unknown>;
    expect(Object.isFrozen(proto)).toBe(true);
    expect(Object.isFrozen(proto.constructor)).toBe(true);
  });
});
