/**
 * The policy file's inbox fields (issue 27): a tool's `summary` template and `risk` thresholds, a rule's
 * `risk` — checked by the schema and at load (with positions), and read by `policyCards`.
 */
import { describe, expect, it } from 'vitest';
import { parsePolicy } from '../../src/policy-file/index.js';
import { policyCards } from '../../src/policy-file/load.js';

const FILE = `version: 1
tools:
  refund:
    summary: "Refund {amount} EUR on order {order}"
    risk:
      - { level: medium, when: { amount: { gt: 200 } } }
      - { level: high, when: { amount: { gt: 1000 } } }
rules:
  - { name: ask_refunds, tools: [refund], result: ask, risk: medium }
  - { name: ask_wires, tools: [wire], result: ask }
`;

describe('summary and risk in a policy file', () => {
  it('loads them, and policyCards reads the template, the thresholds and the rule risk', () => {
    const parsed = parsePolicy(FILE);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    const cards = policyCards(parsed.policy.data);
    expect(cards.rules).toEqual({ ask_refunds: 'medium' });
    expect(cards.tools['refund']!.summary).toBe('Refund {amount} EUR on order {order}');
    const risk = cards.tools['refund']!.risk!;
    expect(risk({ amount: 100 })).toBeNull();
    expect(risk({ amount: 500 })).toBe('medium');
    expect(risk({ amount: 5000 })).toBe('high'); // the highest that holds, whatever the order
  });

  it('refuses a risk level that is not low, medium or high, and a threshold that does not compile, with where', () => {
    const badLevel = parsePolicy(FILE.replace('risk: medium }', 'risk: severe }'));
    expect(badLevel.ok).toBe(false);
    if (!badLevel.ok) expect(badLevel.issues.map((i) => i.at)).toContain('rules[0].risk');
    const badTest = parsePolicy(FILE.replace('{ amount: { gt: 1000 } }', '{ name: { caseInsensitive: true } }'));
    expect(badTest.ok).toBe(false);
    if (!badTest.ok)
      expect(badTest.issues[0]).toMatchObject({ at: 'tools.refund.risk[1].when.name', code: 'invalid-pattern' });
    const badSummary = parsePolicy(FILE.replace('"Refund {amount} EUR on order {order}"', '""'));
    expect(badSummary.ok).toBe(false);
  });
});
