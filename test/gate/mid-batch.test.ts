/**
 * The registry's route (dispatch / executeToolCalls): a context layer changed in place, or the policy changed
 * by a listener, while a batch is in flight. A call the allowlist or policy in force when it runs refuses
 * does not run (issue 10's attacker, branch h10: each of these ran the call).
 */
import { describe, expect, it } from 'vitest';
import { PermissionPolicy, ToolRegistry } from '../../src/index.js';

function setUp(concurrencySafe = false) {
  const ran: string[] = [];
  const registry = new ToolRegistry({ handlerTimeoutMs: 500, confusables: 'off' });
  for (const name of ['a', 'b', 'c']) {
    registry.register({
      name,
      parameters: { type: 'object' },
      metadata: { concurrencySafe },
      execute: async () => {
        ran.push(name);
        await new Promise((r) => setTimeout(r, 2));
        return `${name} ok`;
      },
    });
  }
  return { registry, ran };
}

describe('the registry route: changes while a batch is in flight', () => {
  it('C1: tenant layer spliced in place while call a runs: call b (same dispatch) must be refused', async () => {
    const { registry, ran } = setUp();
    const tenantTools = ['a', 'b'];
    registry.onChange((e) => {
      if (e.type === 'tool_executed' && e.tool === 'a') tenantTools.splice(tenantTools.indexOf('b'), 1);
    });
    const results = await registry.dispatch(
      [
        { id: '1', name: 'a', arguments: {} },
        { id: '2', name: 'b', arguments: {} },
      ],
      { tenant: { id: 't', tools: tenantTools } },
    );
    expect(ran).toEqual(['a']);
    expect(results[1]!.decision).toMatchObject({ effect: 'deny', layer: 'tenant' });
  });

  it('C2: tenant layer spliced while the handler is asked about call b: call a (decided before the wait) must be refused', async () => {
    const { registry, ran } = setUp();
    const tenantTools = ['a', 'b'];
    registry.setPermissionPolicy(
      new PermissionPolicy({ rules: [{ name: 'ask-b', tools: ['b'], result: 'ask' }], fallback: 'allow' }),
    );
    registry.setPermissionHandler(async () => {
      tenantTools.splice(tenantTools.indexOf('a'), 1);
      return 'allow' as const;
    });
    const results = await registry.dispatch(
      [
        { id: '1', name: 'a', arguments: {} },
        { id: '2', name: 'b', arguments: {} },
      ],
      { tenant: { id: 't', tools: tenantTools } },
    );
    expect(ran).not.toContain('a');
    expect(results[0]!.decision).toMatchObject({ effect: 'deny', layer: 'tenant' });
  });

  it('D1: kill switch in a tool_decided listener (deny-all policy) — concurrency-safe batch: no call may run under deny-all', async () => {
    const { registry, ran } = setUp(true);
    registry.setPermissionPolicy(new PermissionPolicy({ rules: [], fallback: 'allow' }));
    let tripped = false;
    registry.onChange((e) => {
      if (e.type === 'tool_decided' && !tripped) {
        tripped = true;
        registry.setPermissionPolicy(new PermissionPolicy({ rules: [], fallback: 'deny', version: 'lockdown' }));
      }
    });
    await registry.dispatch([
      { id: '1', name: 'a', arguments: {} },
      { id: '2', name: 'b', arguments: {} },
      { id: '3', name: 'c', arguments: {} },
    ]);
    // a, b and c were all announced before anything ran; the policy in force when they run denies all
    expect(ran).toEqual([]);
  });

  it('D2: kill switch in a tool_decided listener — not concurrency-safe: the later calls must not run', async () => {
    const { registry, ran } = setUp(false);
    registry.setPermissionPolicy(new PermissionPolicy({ rules: [], fallback: 'allow' }));
    let tripped = false;
    registry.onChange((e) => {
      if (e.type === 'tool_decided' && !tripped) {
        tripped = true;
        registry.setPermissionPolicy(new PermissionPolicy({ rules: [], fallback: 'deny', version: 'lockdown' }));
      }
    });
    await registry.dispatch([
      { id: '1', name: 'a', arguments: {} },
      { id: '2', name: 'b', arguments: {} },
    ]);
    expect(ran).not.toContain('b');
  });
});
