/** An AgentRunner configured straight from a policy file: its agents, tenants, scopes and rules as they load. */
import { describe, expect, it } from 'vitest';
import type { ToolNotPermittedError } from '../../src/index.js';
import { AgentRunner } from '../../src/index.js';
import { ScriptedModel, type RunEventMap } from '../../src/runner/index.js';
import { parsePolicy } from '../../src/policy-file/index.js';
import { shop } from './fixtures.js';

const POLICY = `
version: 1
fallback: allow
agents:
  concierge:
    tools: [search, refund, quote, "agent:pricing"]
    peers: [pricing]
  pricing:
    tools: [quote, "agent:concierge"]
    peers: [concierge]
tenants:
  acme:
    tools: [search, quote, refund, "agent:pricing", "agent:concierge"]
    maxToolCalls: 4
  free:
    tools: [search]
scopes:
  catalog:read: [search, quote, "agent:pricing", "agent:concierge"]
  billing:write: [refund]
rules:
  - name: big_refunds
    tools: refund
    when: { amount: { gt: 100 } }
    result: deny
    reason: refunds over 100 need a human
`;

function load() {
  const parsed = parsePolicy(POLICY, { file: 'policy.yaml' });
  if (!parsed.ok) throw new Error(parsed.issues.map((i) => i.message).join('\n'));
  return parsed.policy;
}

describe('AgentRunner from a policy file', () => {
  it("runs the file's agent graph under its tenants, scopes and rules", async () => {
    const set = load();
    const { registry, executed } = shop();
    registry.setPermissionPolicy(set.policy);
    const model = new ScriptedModel({
      concierge: [
        {
          toolCalls: [
            { name: 'search', arguments: { query: 'lamp' } },
            { name: 'agent:pricing', arguments: { input: 'price the lamp' } },
          ],
        },
        { toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] },
        { text: 'done' },
      ],
      pricing: [{ toolCalls: [{ name: 'quote', arguments: { item: 'lamp' } }] }, { text: '42' }],
    });
    const runner = new AgentRunner({
      registry,
      model,
      tenants: (id) => set.tenantLimits(id),
      scopes: set.scopes,
      onRefusal: 'continue',
    });
    const events: RunEventMap['tool_refused'][] = [];
    runner.on('tool_refused', (e) => events.push(e));
    const result = await runner.run(set.agent('concierge'), 'a lamp', {
      tenant: 'acme',
      caller: { id: 'ana', scopes: ['catalog:read', 'billing:write'] },
    });
    expect(result.status).toBe('completed');
    expect(executed).toEqual({ search: 1, quote: 1 });
    // The file's rule denied the big refund; the peer ran under the file's narrowing.
    expect(events.map((e) => [e.path.join('>'), e.decision.tool, e.decision.rule])).toEqual([
      ['concierge', 'refund', 'big_refunds'],
    ]);
    expect(model.requests.find((r) => r.agent === 'pricing')!.tools.map((t) => t.name)).toEqual(['quote']);
  });

  it("holds the run to the file's tenant caps and scope map (an unmapped scope covers nothing)", async () => {
    const set = load();
    const { registry, executed } = shop();
    registry.setPermissionPolicy(set.policy);
    const calls = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ name: 'search', arguments: { query: `q${i}` } }));
    const runner = new AgentRunner({
      registry,
      model: new ScriptedModel([{ toolCalls: calls(6) }, { text: 'never' }]),
      tenants: (id) => set.tenantLimits(id),
      scopes: set.scopes,
    });
    const capped = await runner.run(set.agent('concierge'), 'go', {
      tenant: 'acme',
      caller: { scopes: ['catalog:read'] },
    });
    expect(capped.status).toBe('budget_exceeded');
    expect(capped.attempts).toBe(4);
    expect(executed['search']).toBe(4);

    // 'search' is a tool name but not a scope of the file: it grants nothing.
    const refused = await runner.run(set.agent('concierge'), 'go', { tenant: 'acme', caller: { scopes: ['search'] } });
    expect(refused.status).toBe('failed');
    expect((refused.error as ToolNotPermittedError).reason).toBe('caller');

    // A tenant the file does not declare fails the run closed.
    const unknown = await runner.run(set.agent('concierge'), 'go', { tenant: 'nobody' });
    expect(unknown.status).toBe('failed');
    expect(unknown.error?.message).toMatch(/tenant "nobody" is not declared/);
  });

  it('gives peers as agents, a cycle of peers as a cycle of objects, all frozen', () => {
    const set = load();
    const concierge = set.agent('concierge');
    const pricing = concierge.peers[0]!;
    expect(pricing).toBe(set.agent('pricing'));
    expect(pricing.peers[0]).toBe(concierge);
    expect(Object.isFrozen(concierge) && Object.isFrozen(concierge.peers) && Object.isFrozen(concierge.tools)).toBe(
      true,
    );
    expect(Object.isFrozen(set.scopes) && Object.isFrozen(set.scopes['catalog:read'])).toBe(true);
    expect(set.tenantLimits('acme')).toEqual({
      tools: ['search', 'quote', 'refund', 'agent:pricing', 'agent:concierge'],
      maxToolCalls: 4,
    });
  });
});
