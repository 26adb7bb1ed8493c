import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AgentRunner, canonical } from '../../src/index.js';
import { ScriptedModel } from '../../src/runner/index.js';
import { shop } from './fixtures.js';

const TOOLS = ['search', 'quote', 'ledger', 'refund'] as const;
const ARGS: Record<(typeof TOOLS)[number], Record<string, unknown>> = {
  search: { query: 'q' },
  quote: { item: 'i' },
  ledger: {},
  refund: { order: 'A', amount: 5 },
};

describe('AgentRunner: per-dispatch enforcement (property)', () => {
  it('a tool executes only if the declaration, the plan read for that dispatch and the caller all permit it', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom(...TOOLS), { minLength: 1, maxLength: 8 }),
        fc.array(fc.option(fc.subarray([...TOOLS]), { nil: null }), { minLength: 1, maxLength: 12 }),
        fc.subarray([...TOOLS]),
        fc.option(fc.subarray([...TOOLS]), { nil: null }),
        async (calls, plans, declared, scopes) => {
          const { registry } = shop();
          const model = new ScriptedModel([
            ...calls.map((name) => ({ toolCalls: [{ name, arguments: ARGS[name] }] })),
            { text: 'done' },
          ]);
          // Each read of the provider gets the next plan (cycling): the plan can change between any two dispatches.
          let reads = 0;
          let current: readonly string[] | null = null;
          const runner = new AgentRunner({
            registry,
            model,
            onRefusal: 'continue',
            refusalLoopLimit: 100,
            tenants: () => {
              current = plans[reads++ % plans.length] ?? null;
              return { tools: current };
            },
          });
          const violations: string[] = [];
          registry.onChange((event) => {
            if (event.type !== 'tool_executed') return;
            const tool = canonical(event.tool);
            const ok =
              declared.includes(tool as never) &&
              (current === null || current.includes(tool)) &&
              (scopes === null || scopes.includes(tool as never));
            if (!ok) violations.push(`${tool} ran under plan ${JSON.stringify(current)}`);
          });
          const result = await runner.run({ name: 'agent', tools: declared }, 'go', { caller: { scopes } });
          expect(violations).toEqual([]);
          expect(result.attempts).toBe(calls.length);
          // Every call not executed was refused with a Decision, and every refusal is counted.
          expect(result.refusals).toBe(result.decisions.filter((d) => d.effect === 'deny').length);
        },
      ),
      { numRuns: 60 },
    );
  });
});
