import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ALLOW_READONLY,
  ConfigurationError,
  defineTool,
  PermissionPolicy,
  ToolRegistry,
  type Decision,
  type RegistryEvent,
} from '../../src/index.js';
import { fixture } from './helpers.js';

describe('registration', () => {
  it('refuses a second tool with the same canonical name, never overwriting', () => {
    const { registry } = fixture();
    expect(() =>
      registry.register(defineTool({ name: 'ＳＥＡＲＣＨ', parameters: { type: 'object' }, execute: () => 1 })),
    ).toThrow(ConfigurationError);
    expect(registry.get('search')?.description).toBe('Search');
    expect(registry.has('Search')).toBe(true);
  });

  it('keeps namespaced tools apart from native ones', () => {
    const { registry, add } = fixture();
    add('mcp:search');
    expect(registry.list().map((t) => t.name)).toEqual(['search', 'refund', 'sudo', 'fetch_url', 'mcp:search']);
    expect(registry.get('mcp:search')?.namespace).toBe('mcp');
  });

  it('checks definitions at definition time', () => {
    expect(() => defineTool({ name: 'x\u200b', parameters: { type: 'object' }, execute: () => 1 })).toThrow(
      ConfigurationError,
    );
    expect(() => defineTool({ name: 'x', parameters: { type: 'nonsense' }, execute: () => 1 })).toThrow(
      /does not compile/,
    );
    expect(() =>
      defineTool({
        name: 'x',
        parameters: { type: 'object' },
        metadata: { tags: ['shiny' as 'slow'] },
        execute: () => 1,
      }),
    ).toThrow(/unknown tag/);
    expect(() =>
      defineTool({ name: 'x', parameters: { type: 'object' }, metadata: { timeoutMs: -1 }, execute: () => 1 }),
    ).toThrow(/timeoutMs/);
    expect(() => new ToolRegistry({ handlerTimeoutMs: 0 })).toThrow(/handlerTimeoutMs/);
  });

  it('can unregister and register again', () => {
    const { registry } = fixture();
    expect(registry.unregister('REFUND')).toBe(true);
    expect(registry.has('refund')).toBe(false);
    expect(registry.unregister('refund')).toBe(false);
  });
  it('a default agent declares exactly the tools registered at each dispatch, in registration order', async () => {
    const registry = new ToolRegistry({ confusables: 'off' });
    const add = (name: string): void =>
      void registry.register(defineTool({ name, parameters: { type: 'object' }, execute: () => name }));
    for (let i = 0; i < 300; i++) add(`t${i}`);
    expect(registry.allowlist().names).toEqual(Array.from({ length: 300 }, (_, i) => `t${i}`));
    expect((await registry.invoke('t299', {})).status).toBe('ok');
    const before = registry.allowlist().names;
    registry.unregister('t5');
    add('late');
    expect(registry.allowlist().names).toEqual([...before.filter((n) => n !== 't5'), 'late']);
    expect((await registry.invoke('late', {})).status).toBe('ok');
    expect((await registry.invoke('t5', {})).decision).toMatchObject({ effect: 'deny', stage: 'lookup' });
    expect(before).toHaveLength(300); // a list handed out earlier does not change
    expect(Object.isFrozen(before)).toBe(true);
  });
});

describe('the dispatch path', () => {
  it('allows everything when no policy is set, but still applies the allowlist', async () => {
    const { registry, ran } = fixture();
    const ok = await registry.invoke('sudo', {});
    expect(ok.decision).toMatchObject({ effect: 'allow', by: 'no_policy' });
    const refused = await registry.invoke('sudo', {}, { tenant: { id: 't', tools: ['search'] } });
    expect(refused.decision).toMatchObject({ effect: 'deny', stage: 'allowlist', layer: 'tenant', tenant: 't' });
    expect(ran.map((r) => r.tool)).toEqual(['sudo']);
  });

  it('refuses an unknown tool as not_declared, naming it', async () => {
    const { registry } = fixture();
    const result = await registry.invoke('launch_missiles', {});
    expect(result.status).toBe('refused');
    expect(result.decision).toMatchObject({ stage: 'lookup', layer: 'not_declared' });
    expect(result.content).toContain('launch_missiles');
  });

  it('refuses malformed JSON and non-object arguments instead of running with {}', async () => {
    const { registry, ran } = fixture();
    for (const args of ['{"query": "x"', '[1,2]', 'null', '42', 7, ['a']]) {
      const result = await registry.invoke('refund', args);
      expect(result.decision).toMatchObject({ effect: 'deny', stage: 'arguments', by: 'malformed_arguments' });
      expect(result.content).toMatch(/JSON|object/);
    }
    expect(ran).toEqual([]);
  });

  it('validates with a Standard Schema and passes the validated value to rules and the tool', async () => {
    const { registry, ran } = fixture();
    const seen: unknown[] = [];
    registry.setPermissionPolicy(
      new PermissionPolicy({ rules: [{ name: 'spy', match: (_t, p) => (seen.push(p), true), result: 'allow' }] }),
    );
    const bad = await registry.invoke('search', { query: 5 });
    expect(bad.decision).toMatchObject({ effect: 'deny', stage: 'validation' });
    expect(bad.content).toContain('query');
    expect(seen).toEqual([]);
    const good = await registry.invoke('search', '{"query":"  shoes "}');
    expect(good.status).toBe('ok');
    expect(seen).toEqual([{ query: 'shoes' }]);
    expect(ran).toEqual([{ tool: 'search', args: { query: 'shoes' } }]);
    expect(good.value).toEqual({ hits: ['shoes'] });
  });

  it('validates with a JSON Schema', async () => {
    const registry = new ToolRegistry();
    registry.register(
      defineTool({
        name: 'refund',
        parameters: {
          type: 'object',
          properties: { amount: { type: 'number', maximum: 100 } },
          required: ['amount'],
          additionalProperties: false,
        },
        execute: (a) => a,
      }),
    );
    expect((await registry.invoke('refund', { amount: 500 })).decision.stage).toBe('validation');
    expect((await registry.invoke('refund', { amount: 5, extra: 1 })).decision.stage).toBe('validation');
    expect((await registry.invoke('refund', {})).content).toContain('amount');
    expect((await registry.invoke('refund', { amount: 5 })).status).toBe('ok');
  });

  it('checks the allowlist before the policy and never asks for a refused call', async () => {
    const { registry } = fixture();
    let asked = 0;
    registry.setPermissionPolicy(new PermissionPolicy({ rules: [{ name: 'ask', match: () => true, result: 'ask' }] }));
    registry.setPermissionHandler(() => (asked++, 'allow'));
    const result = await registry.invoke('refund', {}, { agent: { name: 'concierge', tools: ['search'] } });
    expect(result.decision).toMatchObject({ stage: 'allowlist', layer: 'not_declared', agent: 'concierge' });
    expect(asked).toBe(0);
  });

  it('resolves the allowlist per dispatch from agent, tenant and caller', async () => {
    const { registry } = fixture();
    const tenant = { id: 'acme', tools: ['search', 'refund'] as string[] };
    const ctx = {
      agent: { name: 'concierge', tools: ['search', 'refund', 'sudo'] },
      tenant,
      caller: { scopes: ['search', 'sudo', 'refund'] },
    };
    expect((await registry.invoke('refund', {}, ctx)).status).toBe('ok');
    tenant.tools = ['search'];
    expect((await registry.invoke('refund', {}, ctx)).decision).toMatchObject({ layer: 'tenant' });
    expect((await registry.invoke('sudo', {}, ctx)).decision).toMatchObject({ layer: 'tenant' });
    const frozen = { ...ctx, caller: { scopes: Object.freeze(['search']) } };
    expect((await registry.invoke('refund', {}, frozen)).decision).toMatchObject({ layer: 'tenant' });
    expect(
      (await registry.invoke('search', { query: 'q' }, { ...frozen, tenant: { id: 'x', tools: Object.freeze([]) } }))
        .decision,
    ).toMatchObject({ layer: 'tenant' });
  });

  it('uses a pre-resolved allowlist from the context', async () => {
    const { registry } = fixture();
    const allowlist = registry.allowlist({ agent: { name: 'a', tools: ['search'] } });
    expect(allowlist.names).toEqual(['search']);
    expect((await registry.invoke('refund', {}, { allowlist })).decision).toMatchObject({
      layer: 'not_declared',
      agent: 'a',
    });
  });

  it('denies when a rule throws, and says so in the Decision', async () => {
    const { registry, ran } = fixture();
    registry.setPermissionPolicy(
      new PermissionPolicy({
        rules: [
          {
            name: 'broken',
            match: () => {
              throw new Error('bad rule');
            },
            result: 'allow',
          },
        ],
        fallback: 'allow',
      }),
    );
    const result = await registry.invoke('refund', {});
    expect(result.decision).toMatchObject({ effect: 'deny', by: 'rule_error', rule: 'broken' });
    expect(result.decision.reason).toContain('bad rule');
    expect(ran).toEqual([]);
  });

  it('times out a slow tool with an error result', async () => {
    const registry = new ToolRegistry();
    let aborted = false;
    registry.register(
      defineTool({
        name: 'slow',
        parameters: { type: 'object' },
        metadata: { timeoutMs: 20 },
        execute: (_a, { signal }) =>
          new Promise((resolve) => {
            signal.addEventListener('abort', () => {
              aborted = true;
              resolve('late');
            });
          }),
      }),
    );
    const result = await registry.invoke('slow', {});
    expect(result.status).toBe('error');
    expect(result.content).toMatch(/did not finish within 20 ms/);
    expect(aborted).toBe(true);
  });

  it('turns a throwing tool into an error result', async () => {
    const { registry, add } = fixture();
    add('explode', {}, () => {
      throw new Error('kaboom');
    });
    const result = await registry.invoke('explode', {});
    expect(result).toMatchObject({ status: 'error', isError: true });
    expect(result.content).toContain('kaboom');
    expect(result.decision.effect).toBe('allow');
  });
});

describe('batches', () => {
  it('decides every call before any runs', async () => {
    const { registry, ran } = fixture();
    const order: string[] = [];
    registry.setPermissionPolicy(
      new PermissionPolicy({ rules: [ALLOW_READONLY, { name: 'ask_rest', match: () => true, result: 'ask' }] }),
    );
    registry.setPermissionHandler((req) => {
      order.push(`ask ${req.toolName} after ${ran.length} runs`);
      return 'allow';
    });
    await registry.executeToolCalls([
      { name: 'search', arguments: { query: 'a' } },
      { name: 'refund', arguments: {} },
      { name: 'fetch_url', arguments: {} },
    ]);
    expect(order).toEqual(['ask refund after 0 runs', 'ask fetch_url after 0 runs']);
    expect(ran.map((r) => r.tool)).toEqual(['search', 'refund', 'fetch_url']);
  });

  it('answers one result per call, in order, with refusals in place', async () => {
    const { registry, ran } = fixture();
    registry.setPermissionPolicy(new PermissionPolicy({ rules: [ALLOW_READONLY], fallback: 'deny' }));
    const results = await registry.dispatch([
      { id: '1', name: 'refund', arguments: {} },
      { id: '2', name: 'search', arguments: { query: 'x' } },
      { id: '3', name: 'nope', arguments: {} },
      { id: '4', name: 'search', arguments: '{' },
      { id: '5', name: 'search', arguments: { query: 'y' } },
    ]);
    expect(results.map((r) => [r.callId, r.status])).toEqual([
      ['1', 'refused'],
      ['2', 'ok'],
      ['3', 'refused'],
      ['4', 'refused'],
      ['5', 'ok'],
    ]);
    expect(ran.map((r) => r.args)).toEqual([{ query: 'x' }, { query: 'y' }]);
  });

  it('runs tools that are not concurrency-safe one at a time', async () => {
    const registry = new ToolRegistry();
    let active = 0;
    let peak = 0;
    let peakUnsafe = 0;
    const define = (name: string, concurrencySafe: boolean) =>
      registry.register(
        defineTool({
          name,
          parameters: { type: 'object' },
          metadata: { concurrencySafe },
          execute: async () => {
            active++;
            peak = Math.max(peak, active);
            if (!concurrencySafe) peakUnsafe = Math.max(peakUnsafe, active);
            await new Promise((r) => setTimeout(r, 10));
            active--;
            return name;
          },
        }),
      );
    define('safe_a', true);
    define('safe_b', true);
    define('unsafe', false);
    const results = await registry.dispatch([
      { name: 'safe_a' },
      { name: 'safe_b' },
      { name: 'unsafe' },
      { name: 'unsafe' },
      { name: 'safe_a' },
    ]);
    expect(results.map((r) => r.content)).toEqual(['safe_a', 'safe_b', 'unsafe', 'unsafe', 'safe_a']);
    expect(peak).toBe(2);
    expect(peakUnsafe).toBe(1);
  });

  it('rejects only on a programming error', async () => {
    const { registry } = fixture();
    await expect(registry.executeToolCalls('nope' as unknown as [])).rejects.toThrow(TypeError);
    const results = await registry.executeToolCalls([
      42 as unknown as { name: string },
      { foo: 1 } as unknown as { name: string },
    ]);
    expect(results).toHaveLength(2);
    for (const r of results)
      expect(r).toMatchObject({ status: 'refused', decision: { stage: 'arguments', by: 'malformed_call' } });
  });
});

describe('call and result shapes', () => {
  it('answers each provider shape in its own shape, errors flagged', async () => {
    const { registry } = fixture();
    registry.setPermissionPolicy(new PermissionPolicy({ rules: [ALLOW_READONLY] }));
    const results = await registry.executeToolCalls([
      { id: 'c1', type: 'function', function: { name: 'search', arguments: '{"query":"a"}' } },
      { type: 'function_call', call_id: 'c2', name: 'refund', arguments: '{}' },
      { type: 'tool_use', id: 'c3', name: 'search', input: { query: 'b' } },
      { type: 'tool_use', id: 'c4', name: 'refund', input: {} },
      { functionCall: { name: 'search', args: { query: 'c' }, id: 'c5' } },
      { functionCall: { name: 'refund', args: {} } },
    ]);
    expect(results[0]).toEqual({ role: 'tool', tool_call_id: 'c1', content: '{"hits":["a"]}' });
    expect(results[1]).toMatchObject({ type: 'function_call_output', call_id: 'c2' });
    expect((results[1] as { output: string }).output).toMatch(/^Tool call refused/);
    expect(results[2]).toEqual({ type: 'tool_result', tool_use_id: 'c3', content: '{"hits":["b"]}' });
    expect(results[3]).toMatchObject({ type: 'tool_result', tool_use_id: 'c4', is_error: true });
    expect(results[4]).toEqual({
      functionResponse: { name: 'search', id: 'c5', response: { output: { hits: ['c'] } } },
    });
    expect(results[5]).toMatchObject({
      functionResponse: { name: 'refund', response: { error: expect.stringMatching(/refused/) } },
    });
  });

  it('shows the model only the tools the allowlist permits, in declared order', () => {
    const { registry } = fixture();
    const ctx = {
      agent: { name: 'a', tools: ['fetch_url', 'search', 'refund'] },
      tenant: { tools: ['search', 'fetch_url'] },
    };
    expect(registry.schemas('openai-chat', ctx).map((s) => ('function' in s ? s.function.name : ''))).toEqual([
      'fetch_url',
      'search',
    ]);
    const anthropic = registry.schemas('anthropic', ctx);
    expect(anthropic[1]).toMatchObject({
      name: 'search',
      description: 'Search',
      input_schema: { type: 'object', properties: { query: { type: 'string' } } },
    });
    expect(registry.schemas('gemini', ctx)).toHaveLength(2);
    expect(registry.schemas('openai-responses', ctx)[0]).toMatchObject({
      type: 'function',
      name: 'fetch_url',
      strict: false,
    });
    expect(() => registry.schemas('cohere' as 'gemini')).toThrow(TypeError);
  });

  it('still refuses a hidden tool that the model calls anyway', async () => {
    const { registry } = fixture();
    const ctx = { tenant: { tools: ['search'] } };
    expect(registry.schemas('anthropic', ctx).map((s) => ('name' in s ? s.name : ''))).toEqual(['search']);
    expect((await registry.invoke('refund', {}, ctx)).status).toBe('refused');
  });
});

describe('events', () => {
  it('emits permission_denied, permission_asked and one tool_decided per call', async () => {
    const { registry, events } = fixture();
    registry.setPermissionPolicy(
      new PermissionPolicy({
        rules: [ALLOW_READONLY, { name: 'ask_refund', tools: ['refund'], result: 'ask', reason: 'money' }],
      }),
    );
    registry.setPermissionHandler(() => 'deny');
    events.length = 0;
    await registry.executeToolCalls([
      { id: 'a', name: 'search', arguments: { query: 'q' } },
      { id: 'b', name: 'refund', arguments: { amount: 9 } },
      { id: 'c', name: 'sudo', arguments: {} },
    ]);
    const decided = events
      .filter((e): e is Extract<RegistryEvent, { type: 'tool_decided' }> => e.type === 'tool_decided')
      .map((e) => e.decision);
    expect(decided.map((d: Decision) => [d.callId, d.effect])).toEqual([
      ['a', 'allow'],
      ['b', 'deny'],
      ['c', 'deny'],
    ]);
    expect(events.find((e) => e.type === 'permission_asked')).toMatchObject({
      tool: 'refund',
      reason: 'money',
      ruleName: 'ask_refund',
      parameters: { amount: 9 },
    });
    const denied = events.filter((e) => e.type === 'permission_denied');
    expect(denied).toHaveLength(2);
    expect(denied[0]).toMatchObject({ tool: 'refund', ruleName: 'ask_refund', parameters: { amount: 9 } });
    expect(denied[1]).toMatchObject({ tool: 'sudo', ruleName: null });
    expect(events.some((e) => e.type === 'tool_executed' && e.tool === 'search')).toBe(true);
  });

  it('keeps going when a listener throws, and unsubscribes', async () => {
    const registry = new ToolRegistry();
    registry.register(defineTool({ name: 't', parameters: z.object({}), execute: () => 'ran' }));
    const off = registry.onChange(() => {
      throw new Error('listener bug');
    });
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    expect((await registry.invoke('t', {})).status).toBe('ok');
    off();
    await new Promise((r) => setImmediate(r));
    process.off('warning', onWarning);
    expect(warnings.some((w) => w.includes('listener bug'))).toBe(true);
  });
});

describe('execution', () => {
  it('is not on the public surface: the registry publishes no execute step, environment, emit or announce', () => {
    const { registry } = fixture();
    for (const name of ['runAllowed', 'environment', 'emit', 'announce']) expect(name in registry, name).toBe(false);
    expect(Object.getOwnPropertySymbols(Object.getPrototypeOf(registry))).toEqual([]);
  });
});
