/**
 * Attack (issue 25, precheck parsing a model's JSON text in place): text that does not parse into an object is
 * parsed again by parseArguments for its problem. Every hostile text must be decided as parseArguments and the
 * snapshot decide it: refused with parseArguments' own problem when it is not a JSON object; refused for a
 * `__proto__` key at any depth; 1e400 read as null (then refused by a number schema); duplicate keys read as
 * JSON.parse reads them (the last) by the policy AND the tool alike; never run with arguments other than
 * those decided.
 */
import { describe, expect, it } from 'vitest';
import { parseArguments } from '../../src/formats/index.js';
import { PermissionPolicy, ToolRegistry } from '../../src/index.js';

function setUp() {
  const ran: unknown[] = [];
  const registry = new ToolRegistry({ confusables: 'off' });
  registry.register({
    name: 'refund',
    parameters: { type: 'object', properties: { amount: { type: 'number' } } },
    execute: (args) => void ran.push(args),
  });
  registry.setPermissionPolicy(
    new PermissionPolicy({
      rules: [
        {
          name: 'big refunds',
          tools: ['refund'],
          match: (_tool, args) => typeof args['amount'] !== 'number' || args['amount'] > 100,
          result: 'deny',
        },
      ],
      fallback: 'allow',
    }),
  );
  return { registry, ran };
}

const NOT_OBJECTS = [
  '',
  '   ',
  '\n',
  'null',
  'true',
  '1',
  '"{}"',
  '[{"amount":1}]',
  '[]',
  '{"amount":1}{}',
  '{',
  '{"amount":1,}',
  '\u2028{}',
];

describe('attack: JSON text arguments parsed inside precheck', () => {
  it('refuses text that is not a JSON object with parseArguments own problem, and runs nothing', async () => {
    const { registry, ran } = setUp();
    for (const text of NOT_OBJECTS) {
      const expected = parseArguments(text);
      const result = await registry.invoke('refund', text);
      expect(result.status, JSON.stringify(text)).toBe('refused');
      if (!expected.ok) {
        expect(result.decision.by).toBe('malformed_arguments');
        expect(result.decision.reason).toBe(expected.problem);
      }
    }
    expect(ran).toEqual([]);
  });

  it('refuses a __proto__ key at any depth', async () => {
    const { registry, ran } = setUp();
    for (const text of ['{"__proto__":{"amount":1}}', '{"amount":1,"x":{"__proto__":{}}}', '{"x":[{"__proto__":1}]}']) {
      expect((await registry.invoke('refund', text)).status, text).toBe('refused');
    }
    expect(ran).toEqual([]);
  });

  it('reads duplicate keys and huge numbers once, alike for the policy and the tool', async () => {
    const { registry, ran } = setUp();
    // The last duplicate wins for both: denied, never run with 5.
    expect((await registry.invoke('refund', '{"amount":5,"amount":500}')).status).toBe('refused');
    expect((await registry.invoke('refund', '{"amount":500,"amount":5}')).status).toBe('ok');
    // 1e400 is not a number to the schema (null): refused, not run as Infinity past the rule.
    expect((await registry.invoke('refund', '{"amount":1e400}')).status).toBe('refused');
    expect((await registry.invoke('refund', '{"amount":-1e400}')).status).toBe('refused');
    expect(ran).toEqual([{ amount: 5 }]);
    expect(Object.isFrozen(ran[0])).toBe(true);
  });
});
