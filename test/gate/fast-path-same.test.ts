/**
 * The single-call fast path (`dispatchOwnCall`, what `invoke` and a one-call `executeToolCalls` take) decides
 * every call as the one order does: on random calls, layers and rules, the Decision and the result of the
 * fast path equal those of the same call taken through the Batch (a listener makes it take the one order).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defineTool, PermissionPolicy, ToolRegistry, type GateContext } from '../../src/index.js';

const NAMES = ['search', 'refund', 'Refund', 'delete_all', 'ｓｅａｒｃｈ', 'unknown', ''];
const TOOLS = ['search', 'refund', 'delete_all'];

function registryOf(policy: PermissionPolicy) {
  const registry = new ToolRegistry();
  for (const name of TOOLS)
    registry.register(
      defineTool({
        name,
        parameters: { type: 'object', properties: { amount: { type: 'integer', minimum: 0 } } },
        execute: name === 'refund' ? async (args) => `refunded ${String(args['amount'])}` : () => `${name} ok`,
      }),
    );
  registry.setPermissionPolicy(policy);
  return registry;
}

/** A result without what differs by construction (the generated call id). */
function comparable(result: unknown): unknown {
  return JSON.parse(JSON.stringify(result, (key, value: unknown) => (key === 'callId' || key === 'id' ? '·' : value)));
}

const layer = fc.option(fc.subarray(TOOLS), { nil: undefined });
const rule = fc.record({
  tools: fc.subarray(TOOLS, { minLength: 1 }),
  result: fc.constantFrom('allow', 'deny') as fc.Arbitrary<'allow' | 'deny'>,
});
const args = fc.oneof(
  fc.record({ amount: fc.integer({ min: -3, max: 5 }) }),
  fc.constant({ amount: 'x' }),
  fc.constant('{"amount":1}'),
  fc.constant('{not json'),
  fc.constant(null),
);

describe('the fast path decides as the one order does', () => {
  it('on random calls, layers and rules: the same Decision and result', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(rule, { maxLength: 4 }),
        fc.constantFrom('allow', 'deny') as fc.Arbitrary<'allow' | 'deny'>,
        layer,
        layer,
        layer,
        fc.array(fc.tuple(fc.constantFrom(...NAMES), args), { minLength: 1, maxLength: 6 }),
        async (rules, fallback, declared, tenant, caller, calls) => {
          // One policy object for both: its version is part of every Decision.
          const policy = new PermissionPolicy({ rules: rules.map((r, i) => ({ name: `r${i}`, ...r })), fallback });
          const fast = registryOf(policy);
          const batch = registryOf(policy);
          batch.onChange(() => {});
          for (const [name, given] of calls) {
            const context: GateContext = {
              agent: declared ? { name: 'a', tools: declared } : 'a',
              ...(tenant ? { tenant: { id: 't', tools: tenant } } : {}),
              ...(caller ? { caller: { id: 'c', scopes: caller } } : {}),
            };
            const a = await fast.invoke(name, given, context);
            const b = await batch.invoke(name, given, context);
            expect(comparable(a)).toEqual(comparable(b));
            const chat = {
              id: 'call_1',
              type: 'function' as const,
              function: { name, arguments: JSON.stringify(given) },
            };
            const [c] = await fast.executeToolCalls([chat], context);
            const [d] = await batch.executeToolCalls([chat], context);
            expect(comparable(c)).toEqual(comparable(d));
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
