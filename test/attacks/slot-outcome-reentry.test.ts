/**
 * An attack on the joint slot's kept policy outcome (src/gate/slot-memo.ts `outcomeSlot`, issue 25.1): the outcome is
 * asked of the policy (`FIXED_OUTCOME`, which runs a rule's `select` the first time a policy sees a tool) and only then
 * written into the slot. A `select` that calls, synchronously, a tool of the same name in another registry under the
 * same steady layers re-keeps the slot for that registry's tool meanwhile; the outcome written after must not become
 * that tool's, or a later call of it in its registry would be decided by the other registry's policy (run where its own
 * denies). Same results under steady layers as under fresh copies of them.
 */
import { describe, expect, it } from 'vitest';
import { defineTool, PermissionPolicy, ToolRegistry } from '../../src/index.js';
import { steadyContexts } from '../gate/fixtures/steady-contexts.js';

const NAMES = ['slow', 'other'];

function comparable(result: unknown): unknown {
  return JSON.parse(
    JSON.stringify(result, (key, value: unknown) =>
      key === 'durationMs' || key === 'callId' || key === 'policyVersion' ? '·' : value,
    ),
  ) as unknown;
}

async function reentered(steady: boolean, denyInTwo: boolean): Promise<unknown[]> {
  const context = steadyContexts(NAMES, steady);
  const ran: string[] = [];
  const one = new ToolRegistry();
  const two = new ToolRegistry();
  for (const [registry, label] of [
    [one, 'one'],
    [two, 'two'],
  ] as const)
    for (const name of NAMES)
      registry.register(
        defineTool({ name, parameters: { type: 'object' }, execute: () => ran.push(`${label}:${name}`) }),
      );
  const other = denyInTwo ? 'deny' : 'allow';
  two.setPermissionPolicy(
    new PermissionPolicy({ rules: [{ name: 'two_says', tools: ['slow'], result: other, reason: 'two' }] }),
  );
  one.setPermissionPolicy(new PermissionPolicy({ rules: [], fallback: 'allow' }));
  const trace: unknown[] = [];
  // Warm: the steady arrays joined, the slot keeping registry one's tool.
  for (let i = 0; i < 40; i++) trace.push(comparable(await one.invoke('slow', {}, context())));
  // A new policy for registry one: its `select` runs on the next call of `slow`, and calls registry two's.
  let inner: Promise<unknown> | null = null;
  one.setPermissionPolicy(
    new PermissionPolicy({
      rules: [
        {
          name: 'probe',
          tools: ['slow'],
          select: () => {
            inner ??= two.invoke('slow', {}, context());
            return false;
          },
          result: 'deny',
        },
        { name: 'one_says', tools: ['slow'], result: denyInTwo ? 'allow' : 'deny', reason: 'one' },
      ],
    }),
  );
  trace.push(comparable(await one.invoke('slow', {}, context())));
  trace.push(comparable(await inner));
  for (let i = 0; i < 3; i++) {
    trace.push(comparable(await two.invoke('slow', {}, context())));
    trace.push(comparable(await one.invoke('slow', {}, context())));
  }
  trace.push(ran);
  return trace;
}

describe("a joint slot's kept outcome, when the policy's select calls the same name in another registry", () => {
  for (const denyInTwo of [true, false])
    it(`decides each registry's calls by its own policy (two ${denyInTwo ? 'denies' : 'allows'}, one the other)`, async () => {
      const fresh = await reentered(false, denyInTwo);
      const steady = await reentered(true, denyInTwo);
      expect(steady).toEqual(fresh);
    });
});
