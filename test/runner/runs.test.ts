import { describe, expect, it, vi } from 'vitest';
import { AgentRunner, ConfigurationError, ToolNotPermittedError, type TenantLimits } from '../../src/index.js';
import { ScriptedModel, type RunEvent } from '../../src/runner/index.js';
import { memoryStores } from '../../src/stores/index.js';
import { shop, SECRET } from './fixtures.js';

const concierge = { name: 'concierge', tools: ['search', 'refund', 'quote'] };

describe('AgentRunner.run: the allowlist per dispatch', () => {
  it('shows the model only the tools the allowlist permits, in declared order', async () => {
    const { registry } = shop();
    const model = new ScriptedModel([{ text: 'hello' }]);
    const runner = new AgentRunner({ registry, model, tenants: { acme: { tools: ['quote', 'search'] } } });
    const result = await runner.run({ name: 'concierge', tools: ['refund', 'quote', 'ledger', 'search'] }, 'hi', {
      tenant: 'acme',
      caller: { scopes: ['search', 'quote', 'refund'] },
    });
    expect(result.status).toBe('completed');
    expect(model.requests[0]!.tools.map((t) => t.name)).toEqual(['quote', 'search']);
    expect(model.requests[0]!.tools[0]).toMatchObject({
      name: 'quote',
      description: 'Price an item',
      parameters: { type: 'object' },
    });
  });

  it('fails the run on a call outside the allowlist, before it executes, with ToolNotPermittedError and a tool_refused event', async () => {
    const { registry, executed } = shop();
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 5 } }] },
      { text: 'never' },
    ]);
    const runner = new AgentRunner({ registry, model, tenants: { acme: { tools: ['search', 'quote'] } } });
    const refused: RunEvent[] = [];
    runner.on('tool_refused', (e) => refused.push(e));
    const result = await runner.run(concierge, 'refund A1', { tenant: 'acme' });
    expect(result.status).toBe('failed');
    expect(result.error).toBeInstanceOf(ToolNotPermittedError);
    const error = result.error as ToolNotPermittedError;
    expect(error.details).toEqual({ tool: 'refund', agent: 'concierge', reason: 'tenant' });
    expect(error.permitted).toEqual(['search', 'quote']);
    expect(executed['refund']).toBeUndefined();
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({
      type: 'tool_refused',
      runId: result.runId,
      agent: 'concierge',
      tenant: 'acme',
      decision: { stage: 'allowlist', layer: 'tenant' },
    });
    expect(model.requests).toHaveLength(1);
    expect(result.attempts).toBe(1);
    expect(result.refusals).toBe(1);
  });

  it('applies a tenant change between two tool calls of one run (the provider is read per dispatch)', async () => {
    const { registry, executed } = shop();
    const plan: { tools: string[] } = { tools: ['search', 'refund'] };
    const provider = vi.fn((): TenantLimits => ({ tools: [...plan.tools] }));
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 5 } }] },
      { toolCalls: [{ name: 'refund', arguments: { order: 'A2', amount: 5 } }] },
      { text: 'done' },
    ]);
    const runner = new AgentRunner({ registry, model, tenants: provider });
    // The plan is downgraded as soon as the first refund has executed.
    registry.onChange((event) => {
      if (event.type === 'tool_executed' && event.tool === 'refund') plan.tools = ['search'];
    });
    const result = await runner.run(concierge, 'two refunds', { tenant: 'acme' });
    expect(executed['refund']).toBe(1);
    expect(result.status).toBe('failed');
    expect((result.error as ToolNotPermittedError).reason).toBe('tenant');
    expect(result.decisions.map((d) => [d.effect, d.parameters?.['order']])).toEqual([
      ['allow', 'A1'],
      ['deny', 'A2'],
    ]);
    // Read for the first turn, the first call, the second turn and the second call at least.
    expect(provider.mock.calls.length).toBeGreaterThanOrEqual(4);
    // And the model was no longer shown refund on the second turn.
    expect(model.requests[1]!.tools.map((t) => t.name)).toEqual(['search']);
  });

  it("with onRefusal 'continue', answers the model with an error result that names the refusal and offers no appeal", async () => {
    const { registry, executed } = shop();
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: 'refund', arguments: { order: 'A1', amount: 5 } },
          { name: 'search', arguments: { query: 'x' } },
        ],
      },
      { text: 'sorry' },
    ]);
    const runner = new AgentRunner({ registry, model, onRefusal: 'continue' });
    const result = await runner.run(concierge, 'go', { caller: { scopes: ['search'] } });
    expect(result.status).toBe('completed');
    expect(executed['refund']).toBeUndefined();
    expect(executed['search']).toBe(1);
    const seen = model.requests[1]!.messages.filter((m) => m.role === 'tool');
    expect(seen[0]).toMatchObject({ tool: 'refund', isError: true });
    expect(seen[0]!.role === 'tool' && seen[0]!.content).toMatch(/refused \(layer caller\).*cannot be appealed/);
    expect(seen[1]).toMatchObject({ tool: 'search', isError: false, content: '3 results for x' });
  });

  it('maps capability scopes to tool names at the boundary', async () => {
    const { registry, executed } = shop();
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 5 } }] },
      { text: 'ok' },
    ]);
    const runner = new AgentRunner({
      registry,
      model,
      scopes: { 'billing:write': ['refund'], 'catalog:read': ['search', 'quote'] },
    });
    const ok = await runner.run(concierge, 'go', { caller: { scopes: ['billing:write'] } });
    expect(ok.status).toBe('completed');
    expect(executed['refund']).toBe(1);
    expect(model.requests[0]!.tools.map((t) => t.name)).toEqual(['refund']);
    const no = await runner.run(concierge, 'go', { caller: { scopes: ['catalog:read'] } });
    expect(no.status).toBe('failed');
    expect((no.error as ToolNotPermittedError).reason).toBe('caller');
  });

  it('refuses at the allowlist before any approval is asked', async () => {
    const { registry } = shop();
    const handler = vi.fn(() => 'allow' as const);
    const model = new ScriptedModel([{ toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] }]);
    const runner = new AgentRunner({ registry, model, handler });
    const result = await runner.run(concierge, 'go', { caller: { scopes: ['search'] } });
    expect(result.status).toBe('failed');
    expect(handler).not.toHaveBeenCalled();
  });

  it('a policy denial is an error result and the run goes on', async () => {
    const { registry, executed } = shop();
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 5000 } }] },
      { toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 50 } }] },
      { text: 'refunded 50 instead' },
    ]);
    const runner = new AgentRunner({ registry, model });
    const result = await runner.run(concierge, 'go');
    expect(result.status).toBe('completed');
    expect(result.output).toBe('refunded 50 instead');
    expect(executed['refund']).toBe(1);
    expect(result.decisions[0]).toMatchObject({ effect: 'deny', stage: 'policy', rule: 'deny_huge_refunds' });
    expect(result.messages[2]).toMatchObject({ role: 'tool', isError: true });
    expect(result.refusals).toBe(1);
    expect(result.attempts).toBe(2);
  });

  it('a hidden tool the model calls anyway is refused; an unknown tool fails the run as not declared', async () => {
    const { registry } = shop();
    const model = new ScriptedModel([{ toolCalls: [{ name: 'ledger', arguments: {} }] }]);
    const runner = new AgentRunner({ registry, model });
    const result = await runner.run(concierge, 'go');
    expect(result.status).toBe('failed');
    expect((result.error as ToolNotPermittedError).reason).toBe('not_declared');
    const model2 = new ScriptedModel([{ toolCalls: [{ name: 'teleport', arguments: {} }] }]);
    const result2 = await new AgentRunner({ registry, model: model2 }).run(concierge, 'go');
    expect(result2.status).toBe('failed');
    expect(result2.decisions[0]).toMatchObject({ stage: 'lookup', layer: 'not_declared' });
  });

  it('every call of a turn is decided before any runs: a refusal late in the batch stops the earlier calls', async () => {
    const { registry, executed } = shop();
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: 'search', arguments: { query: 'x' } },
          { name: 'refund', arguments: { order: 'A', amount: 1 } },
        ],
      },
    ]);
    const result = await new AgentRunner({ registry, model }).run(concierge, 'go', { caller: { scopes: ['search'] } });
    expect(result.status).toBe('failed');
    expect(executed['search']).toBeUndefined();
  });

  it('malformed arguments and invalid arguments are error results, never run', async () => {
    const { registry, executed } = shop();
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: 'refund', arguments: '{"order": "A1", "amount": ' },
          { name: 'refund', arguments: { order: 'A1', amount: -3 } },
        ],
      },
      { text: 'gave up' },
    ]);
    const result = await new AgentRunner({ registry, model }).run(concierge, 'go');
    expect(result.status).toBe('completed');
    expect(executed['refund']).toBeUndefined();
    expect(result.decisions.map((d) => d.stage)).toEqual(['arguments', 'validation']);
  });

  it('fails closed when the tenant provider throws or knows no such tenant', async () => {
    const { registry, executed } = shop();
    const model = new ScriptedModel([{ toolCalls: [{ name: 'search', arguments: { query: 'x' } }] }, { text: 'ok' }]);
    let calls = 0;
    const runner = new AgentRunner({
      registry,
      model,
      tenants: () => {
        if (++calls > 1) throw new Error('plan database down');
        return {};
      },
    });
    const result = await runner.run(concierge, 'go');
    expect(result.status).toBe('failed');
    expect(result.error?.message).toBe('plan database down');
    expect(executed['search']).toBeUndefined();
    const unknown = await new AgentRunner({ registry, model, tenants: {} }).run(concierge, 'go', { tenant: 'ghost' });
    expect(unknown.status).toBe('failed');
    expect(unknown.error).toBeInstanceOf(ConfigurationError);
  });

  it('validates options with a TypeError naming the option', () => {
    const { registry } = shop();
    const model = new ScriptedModel([]);
    expect(() => new AgentRunner({ registry, model, onRefusal: 'ignore' as 'fail' })).toThrow(/"onRefusal"/);
    expect(() => new AgentRunner({ registry, model, secret: 'short' })).toThrow(/"secret"/);
    expect(() => new AgentRunner({ registry, model, maxDepth: -1 })).toThrow(/"maxDepth"/);
    expect(() => new AgentRunner({ registry, model: {} as never })).toThrow(/"model"/);
    expect(() => new AgentRunner({ registry, model, approvals: {} as never })).toThrow(/"approvals"/);
  });

  it('rejects an agent whose declaration has two names with one canonical form', async () => {
    const { registry } = shop();
    const runner = new AgentRunner({ registry, model: new ScriptedModel([]) });
    await expect(runner.run({ name: 'a', tools: ['search', 'SEARCH'] }, 'x')).rejects.toBeInstanceOf(
      ConfigurationError,
    );
  });

  it('fails closed when the model throws or answers nonsense', async () => {
    const { registry } = shop();
    const throwing = new AgentRunner({ registry, model: { generate: () => Promise.reject(new Error('model down')) } });
    const r1 = await throwing.run(concierge, 'go');
    expect(r1.status).toBe('failed');
    expect(r1.error?.message).toBe('model down');
    const nonsense = new AgentRunner({ registry, model: { generate: () => ({ toolCalls: 'search' }) as never } });
    const r2 = await nonsense.run(concierge, 'go');
    expect(r2.status).toBe('failed');
    expect(r2.error).toBeInstanceOf(TypeError);
  });

  it('fails closed when the approvals store fails: the call does not run', async () => {
    const { registry, executed } = shop();
    const stores = memoryStores();
    const ledger = stores.ledger;
    const broken = {
      ...stores,
      ledger: {
        reserve: () => Promise.reject(new Error('disk full')),
        record: ledger.record.bind(ledger),
        release: ledger.release.bind(ledger),
        inspect: ledger.inspect.bind(ledger),
        list: ledger.list.bind(ledger),
        settle: ledger.settle.bind(ledger),
      },
    };
    const model = new ScriptedModel([{ toolCalls: [{ name: 'search', arguments: { query: 'x' } }] }, { text: 'ok' }]);
    // Wrapped stores are not in-process memory as far as the runner can tell: they need a secret.
    const result = await new AgentRunner({ registry, model, stores: broken, secret: SECRET }).run(concierge, 'go');
    expect(result.status).toBe('failed');
    expect(result.error?.message).toBe('disk full');
    expect(executed['search']).toBeUndefined();
  });

  it('a cap lowered by the tenant mid-run applies to the next call', async () => {
    const { registry, executed } = shop();
    const plan: { maxToolCalls: number } = { maxToolCalls: 10 };
    let n = 0;
    const model = new ScriptedModel([() => ({ toolCalls: [{ name: 'quote', arguments: { item: String(++n) } }] })], {
      whenDone: 'repeat',
    });
    const runner = new AgentRunner({ registry, model, tenants: () => ({ ...plan }) });
    registry.onChange((e) => {
      if (e.type === 'tool_executed' && (executed['quote'] ?? 0) === 2) plan.maxToolCalls = 2;
    });
    const result = await runner.run(concierge, 'go');
    expect(result.status).toBe('budget_exceeded');
    expect(executed['quote']).toBe(2);
    expect(result.attempts).toBe(2);
  });

  it('duplicate call ids in one turn are refused, not merged', async () => {
    const { registry, executed } = shop();
    const model = new ScriptedModel([
      {
        toolCalls: [
          { id: 'x', name: 'search', arguments: { query: 'a' } },
          { id: 'x', name: 'search', arguments: { query: 'b' } },
        ],
      },
      { text: 'ok' },
    ]);
    const result = await new AgentRunner({ registry, model }).run(concierge, 'go');
    expect(result.status).toBe('completed');
    expect(executed['search']).toBe(1);
    expect(result.decisions.map((d) => [d.callId, d.effect])).toEqual([
      ['x', 'allow'],
      ['x~2', 'deny'],
    ]);
  });

  it('cancels tool execution with the run signal', async () => {
    const { registry } = shop();
    const controller = new AbortController();
    controller.abort(new Error('user left'));
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'search', arguments: { query: 'x' } }] },
      (r) => ({ text: (r.messages.at(-1) as { content: string }).content }),
    ]);
    const result = await new AgentRunner({ registry, model }).run(concierge, 'go', { signal: controller.signal });
    expect(result.output).toMatch(/cancelled/);
  });
});
