/**
 * The single-call fast path (`dispatchOwnCall`, what `invoke` and a one-call `executeToolCalls` take) decides
 * every call as the one order does: on random calls, layers and rules, the Decision and the result of the
 * fast path equal those of the same call taken through the Batch (a listener makes it take the one order).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defineTool, PermissionPolicy, ToolAllowlist, ToolRegistry, type GateContext } from '../../src/index.js';

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
  // Some rules look at the arguments: a tool's first such rule means its outcome is not kept per tool.
  above: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
});
type RandomRule = { tools: string[]; result: 'allow' | 'deny'; above: number | undefined };
function policyRule({ tools, result, above }: RandomRule, i: number) {
  return above === undefined
    ? { name: `r${i}`, tools, result }
    : {
        name: `r${i}`,
        tools,
        result,
        match: (_t: unknown, p: Readonly<Record<string, unknown>>) => Number(p['amount']) > above,
      };
}
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
          const policy = new PermissionPolicy({ rules: rules.map(policyRule), fallback });
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

/** Every call shape executeToolCalls reads, for one name and arguments. */
function shapes(name: string, given: unknown): unknown[] {
  const text = JSON.stringify(given) ?? 'null';
  return [
    { id: 'call_1', type: 'function', function: { name, arguments: text } },
    { type: 'function_call', call_id: 'fc_1', name, arguments: text },
    { type: 'tool_use', id: 'tu_1', name, input: given },
    { functionCall: { name, args: given, id: 'g_1' } },
    { id: 'own_1', name, arguments: given },
  ];
}

describe('what the fast path keeps between calls decides as the first look does (issue 25)', () => {
  it('steady layer arrays, names in any spelling, kept policy outcomes and every call shape: the same as the one order and a fresh resolve', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(rule, { maxLength: 4 }),
        fc.constantFrom('allow', 'deny') as fc.Arbitrary<'allow' | 'deny'>,
        layer,
        layer,
        layer,
        fc.array(fc.tuple(fc.constantFrom(...NAMES), args, fc.nat({ max: 4 })), { minLength: 1, maxLength: 12 }),
        async (rules, fallback, declared, tenant, caller, calls) => {
          const policy = new PermissionPolicy({ rules: rules.map(policyRule), fallback });
          const fast = registryOf(policy);
          const batch = registryOf(policy);
          batch.onChange(() => {});
          // The same arrays call after call (what a server holds): past their first look they are indexed and joined.
          const context = (): GateContext => ({
            agent: declared ? { name: 'a', tools: declared } : 'a',
            ...(tenant ? { tenant: { id: 't', tools: tenant } } : {}),
            ...(caller ? { caller: { id: 'c', scopes: caller } } : {}),
          });
          const resolved = ToolAllowlist.resolve(declared ?? TOOLS, { agent: 'a', tenant, caller });
          for (const [name, given, shape] of calls) {
            for (let again = 0; again < 3; again++) {
              const a = await fast.invoke(name, given, context());
              const b = await batch.invoke(name, given, context());
              expect(comparable(a)).toEqual(comparable(b));
              // The allowlist step answers as a fresh resolve of the same layers.
              if (fast.has(name) && a.decision.stage !== 'arguments' && a.decision.stage !== 'validation')
                expect(a.decision.stage === 'allowlist' ? a.decision.layer : null).toBe(resolved.decide(name).reason);
              // A kept policy outcome is the one a traced evaluation (which walks every rule) gives.
              const tool = fast.get(name);
              if (tool && a.decision.parameters) {
                const kept = policy.evaluate(tool, a.decision.parameters);
                const walked = policy.evaluate(tool, a.decision.parameters, { trace: true });
                expect([kept.result, kept.by, kept.rule?.name]).toEqual([walked.result, walked.by, walked.rule?.name]);
              }
            }
            const call = shapes(name, given)[shape]! as Parameters<ToolRegistry['executeToolCalls']>[0][number];
            const [c] = await fast.executeToolCalls([call], context());
            const [d] = await batch.executeToolCalls([call], context());
            expect(comparable(c)).toEqual(comparable(d));
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
