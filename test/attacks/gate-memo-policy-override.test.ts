/**
 * Attack (issue 25, the joint slot's memo of the policy's outcome, src/gate/precheck.ts `evaluationOf`): a policy
 * whose `evaluate` is not PermissionPolicy's own — a subclass that refuses more (a kill switch, a maintenance
 * window), or the method wrapped on the prototype — was asked by every call before the memo. The memo asked the
 * policy's frozen per-tool outcome (`FIXED_OUTCOME`) instead, never `evaluate`: once a steady context's layers
 * were joined, the subclass's refusal was skipped and the refused tool ran.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { defineTool, PermissionPolicy, ToolRegistry, type GateContext, type Tool } from '../../src/index.js';
import { jointsBuilt } from '../../src/allowlist-cache.js';
import type { PolicyEvaluation } from '../../src/permissions/policy.js';

/** The tools the kill switch has stopped, by canonical name. */
const killed = new Set<string>();

class KillSwitchPolicy extends PermissionPolicy {
  override evaluate(
    tool: Tool,
    params: Readonly<Record<string, unknown>>,
    options?: { readonly trace?: boolean },
  ): PolicyEvaluation {
    if (killed.has(tool.canonicalName)) return { result: 'deny', by: 'fallback', rule: null };
    return super.evaluate(tool, params, options);
  }
}

function setup(policy: PermissionPolicy): { registry: ToolRegistry; ran: string[]; context: GateContext } {
  const ran: string[] = [];
  const registry = new ToolRegistry();
  registry.register(
    defineTool({ name: 'refund', parameters: { type: 'object' }, execute: () => void ran.push('refund') }),
  );
  registry.register(
    defineTool({ name: 'search', parameters: { type: 'object' }, execute: () => void ran.push('search') }),
  );
  registry.setPermissionPolicy(policy);
  // A server's steady layers: the same arrays every call (what gets them joined, and the memo used).
  const declared = ['refund', 'search'];
  const plan = ['refund', 'search'];
  return { registry, ran, context: { agent: { name: 'a', tools: declared }, tenant: { id: 't', tools: plan } } };
}

/** Calls `search` under the context until its layers are joined (the joint then answers, and the memo is used). */
async function joined(registry: ToolRegistry, context: GateContext): Promise<void> {
  const before = jointsBuilt();
  for (let i = 0; i < 200 && jointsBuilt() === before; i++) await registry.invoke('search', {}, context);
  expect(jointsBuilt()).toBeGreaterThan(before);
  await registry.invoke('search', {}, context);
}

const ALLOW_ALL = { name: 'allow-all', tools: ['refund', 'search'], result: 'allow' } as const;

describe("attack: a policy's own evaluate skipped by the joint slot's memo", () => {
  afterEach(() => killed.clear());

  it("a subclass's refusal holds on every call under steady layers", async () => {
    killed.add('refund');
    const { registry, ran, context } = setup(new KillSwitchPolicy({ rules: [ALLOW_ALL] }));
    await joined(registry, context);
    for (let i = 0; i < 20; i++) {
      const result = await registry.invoke('refund', {}, context);
      expect({ i, status: result.status }).toEqual({ i, status: 'refused' });
    }
    expect(ran.filter((name) => name === 'refund')).toEqual([]);
  });

  it('a kill switch thrown after the memo was made stops the next call', async () => {
    const { registry, ran, context } = setup(new KillSwitchPolicy({ rules: [ALLOW_ALL] }));
    await joined(registry, context);
    for (let i = 0; i < 10; i++) expect((await registry.invoke('refund', {}, context)).status).toBe('ok');
    killed.add('refund');
    const after = await registry.invoke('refund', {}, context);
    expect(after.status).toBe('refused');
    expect(after.decision.effect).toBe('deny');
    expect(ran.filter((name) => name === 'refund')).toEqual(Array(10).fill('refund'));
  });

  it('evaluate wrapped on the prototype (after the memo was made) is asked', async () => {
    const { registry, ran, context } = setup(new PermissionPolicy({ rules: [ALLOW_ALL] }));
    await joined(registry, context);
    for (let i = 0; i < 10; i++) expect((await registry.invoke('refund', {}, context)).status).toBe('ok');
    const original = Object.getOwnPropertyDescriptor(PermissionPolicy.prototype, 'evaluate')!;
    const asked: string[] = [];
    Object.defineProperty(PermissionPolicy.prototype, 'evaluate', {
      ...original,
      value(this: PermissionPolicy, tool: Tool, params: Readonly<Record<string, unknown>>): PolicyEvaluation {
        asked.push(tool.name);
        return tool.name === 'refund'
          ? { result: 'deny', by: 'fallback', rule: null }
          : (original.value as PermissionPolicy['evaluate']).call(this, tool, params);
      },
    });
    try {
      const after = await registry.invoke('refund', {}, context);
      expect(asked).toEqual(['refund']);
      expect(after.status).toBe('refused');
    } finally {
      Object.defineProperty(PermissionPolicy.prototype, 'evaluate', original);
    }
    expect(ran.filter((name) => name === 'refund')).toEqual(Array(10).fill('refund'));
  });
});
